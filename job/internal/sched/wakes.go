package sched

import "sync"

// jobWakes collects the Wake calls (the Runner's StepperConfig.Wake) for
// the loop, without blocking the driver goroutine that makes them.
type jobWakes struct {
	mu    sync.Mutex
	names map[string]struct{}
	ch    chan struct{} // signalled when names is not empty
}

func newJobWakes() *jobWakes {
	return &jobWakes{names: map[string]struct{}{}, ch: make(chan struct{}, 1)}
}

func (w *jobWakes) add(name string) {
	w.mu.Lock()
	w.names[name] = struct{}{}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *jobWakes) take() map[string]struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.names
	w.names = map[string]struct{}{}
	return names
}
