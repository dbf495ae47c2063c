package bmctest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// concurrentReaders and readsEach size the Concurrency/Reads subtest: enough
// overlap for the race detector to see unsynchronized state, few enough
// requests for a slow peer.
const (
	concurrentReaders = 4
	readsEach         = 3
)

func (s *suite) concurrency(t *testing.T, path string) {
	s.run(t, path, "Reads", func(tc *tcase) {
		getter, hasGetter := tc.drv.(bmc.BootOverrideGetter)
		hasGetter = hasGetter && !tc.opts.lacks(bmc.CapabilityBootOverride) && !tc.opts.lacks(bmc.CapabilityBootOverrideReadBack)
		vm, hasMedia := tc.drv.(bmc.VirtualMedia)
		hasMedia = hasMedia && !tc.opts.lacks(bmc.CapabilityVirtualMediaCD)

		errs := make(chan error, concurrentReaders*readsEach*3)
		var wg sync.WaitGroup
		for g := range concurrentReaders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range readsEach {
					if _, err := tc.drv.PowerState(tc.ctx()); err != nil {
						errs <- fmt.Errorf("reader %d, PowerState #%d: %w", g, i+1, err)
					}
					if hasGetter {
						if _, err := getter.BootOverride(tc.ctx()); err != nil {
							errs <- fmt.Errorf("reader %d, BootOverride #%d: %w", g, i+1, err)
						}
					}
					if hasMedia {
						if _, err := vm.MediaStatus(tc.ctx(), bmc.MediaCD); err != nil {
							errs <- fmt.Errorf("reader %d, MediaStatus #%d: %w", g, i+1, err)
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			tc.noSecret("concurrent read", err)
			tc.Errorf("concurrent reads on one driver (drivers must be safe for concurrent use): %v", err)
		}
	})
}
