package bmctest

import (
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func mediaCapability(k bmc.MediaKind) Capability {
	if k == bmc.MediaUSB {
		return bmc.CapabilityVirtualMediaUSB
	}
	return bmc.CapabilityVirtualMediaCD
}

func (s *suite) virtualMedia(t *testing.T, path string) {
	for _, kind := range []bmc.MediaKind{bmc.MediaCD, bmc.MediaUSB} {
		t.Run(string(kind), func(t *testing.T) {
			kpath := path + "/" + string(kind)
			if s.opts.skipped(kpath) {
				t.Skipf("bmctest: %s is listed in Options.Skip", kpath)
			}
			img1, img2 := s.opts.MediaImages[0], s.opts.MediaImages[1]
			s.run(t, kpath, "InsertEject", func(tc *tcase) {
				vm := tc.media(kind)
				tc.noErr("EjectMedia (clean start)", vm.EjectMedia(tc.ctx(), kind))
				tc.noErr("InsertMedia", vm.InsertMedia(tc.ctx(), kind, img1))
				tc.wantMedia(vm, kind, bmc.MediaStatus{Inserted: true, Image: img1})
				tc.noErr("EjectMedia", vm.EjectMedia(tc.ctx(), kind))
				tc.wantMedia(vm, kind, bmc.MediaStatus{})
			})
			s.run(t, kpath, "InsertTwice", func(tc *tcase) {
				vm := tc.media(kind)
				for i := 1; i <= 2; i++ {
					tc.noErr(fmt.Sprintf("InsertMedia #%d", i), vm.InsertMedia(tc.ctx(), kind, img1))
				}
				tc.wantMedia(vm, kind, bmc.MediaStatus{Inserted: true, Image: img1})
				tc.noErr("EjectMedia", vm.EjectMedia(tc.ctx(), kind))
			})
			s.run(t, kpath, "InsertReplaces", func(tc *tcase) {
				vm := tc.media(kind)
				tc.noErr("InsertMedia(first)", vm.InsertMedia(tc.ctx(), kind, img1))
				tc.noErr("InsertMedia(second)", vm.InsertMedia(tc.ctx(), kind, img2))
				tc.wantMedia(vm, kind, bmc.MediaStatus{Inserted: true, Image: img2})
				tc.noErr("EjectMedia", vm.EjectMedia(tc.ctx(), kind))
			})
			s.run(t, kpath, "EjectEmpty", func(tc *tcase) {
				vm := tc.media(kind)
				tc.noErr("EjectMedia #1", vm.EjectMedia(tc.ctx(), kind))
				tc.noErr("EjectMedia #2 (already empty)", vm.EjectMedia(tc.ctx(), kind))
				tc.wantMedia(vm, kind, bmc.MediaStatus{})
			})
		})
	}
}

// media returns the driver's VirtualMedia or skips.
func (tc *tcase) media(kind bmc.MediaKind) bmc.VirtualMedia {
	tc.Helper()
	vm, ok := tc.drv.(bmc.VirtualMedia)
	if !ok {
		tc.Skipf("%T does not implement bmc.VirtualMedia", tc.drv)
	}
	if c := mediaCapability(kind); tc.opts.lacks(c) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", c, c)
	}
	return vm
}

// wantMedia polls MediaStatus until it reads want (some BMCs attach media
// asynchronously).
func (tc *tcase) wantMedia(vm bmc.VirtualMedia, kind bmc.MediaKind, want bmc.MediaStatus) {
	tc.Helper()
	tc.poll(fmt.Sprintf("%s media status %+v", kind, want), func() (bool, string) {
		got, err := vm.MediaStatus(tc.ctx(), kind)
		if err != nil {
			tc.requireOpError("MediaStatus", err)
			if !bmc.IsTransient(err) {
				tc.Fatalf("MediaStatus(%s): %v", kind, err)
			}
			return false, err.Error()
		}
		if !want.Inserted {
			// An empty device may still name its last image.
			return !got.Inserted, fmt.Sprintf("%+v", got)
		}
		return got == want, fmt.Sprintf("%+v", got)
	})
}
