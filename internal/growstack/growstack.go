// Package growstack grows a new goroutine's stack up front, while it is one
// frame deep: the job Runner's step workers and bench/fleet's floor use it.
package growstack

// Grow grows the calling goroutine's stack to what a step needs while
// the goroutine is still shallow (one frame deep), so the runtime copies it
// once, when it holds almost nothing. A step worker starts with the
// runtime's small initial stack and needs about 16 KiB (JSON records, BMC
// calls); grown on the way, the stack was copied three times at increasing
// depth, every copy walking and adjusting all frames, and at 10,000 jobs
// starting at once the copies (and the runtime's stack-pool lock they
// contend on) took 8-9% of the process's CPU, 2-3% with this
// (bench/fleet -cpuprofile). The 10 KiB array makes the runtime grow the
// stack straight to 16 KiB, the size a step reaches anyway; a larger one
// (32 KiB stacks) made GCs shrink the stacks of steps waiting on a BMC,
// which cost more than it saved. The same trick as CockroachDB's
// util/growstack.
//
// The array is in a branch that never runs (touch is false): its
// room is in the frame, so the function's prologue grows the stack, but it
// is never zeroed. Zeroing it wrote 10 KiB of fresh stack per worker, i.e.
// first touches (page faults) of pages a step may never use.
//
//go:noinline
func Grow() {
	if touch {
		var buf [10 << 10]byte
		touchStack(buf[:])
	}
}

// touch is false; a variable, so the compiler keeps Grow's array (and its
// room in the frame).
var touch bool

// touchStack reads b, so the compiler keeps Grow's array; b does not
// escape, so the array stays on the stack.
//
//go:noinline
func touchStack(b []byte) byte { return b[len(b)-1] }
