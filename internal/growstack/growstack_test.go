package growstack

import (
	"runtime"
	"sync"
	"testing"
)

// TestGrowGrowsTheStack: goroutines that called Grow hold stacks
// of 16 KiB each (at least 12 KiB counted, for other goroutines' noise), though the array that makes the frame large is
// never written (a compiler that dropped it would leave them at 8 KiB or
// less).
func TestGrowGrowsTheStack(t *testing.T) {
	const n = 200
	var ms0, ms1 runtime.MemStats
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			Grow()
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	runtime.ReadMemStats(&ms1)
	close(release)
	done.Wait()
	perG := (int64(ms1.StackInuse) - int64(ms0.StackInuse)) / n
	if perG < 12<<10 {
		t.Errorf("stack in use per goroutine after Grow: %d bytes, want at least %d", perG, 12<<10)
	}
}
