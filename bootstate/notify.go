package bootstate

import "sync"

// notifier wakes in-process waiters when a key is written, so [Tracker.Wait]
// does not poll the store for changes this process made. Waiters take the
// key's channel before reading the record; a write closes it.
type notifier struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

func (n *notifier) watch(key string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.chans == nil {
		n.chans = map[string]chan struct{}{}
	}
	ch, ok := n.chans[key]
	if !ok {
		ch = make(chan struct{})
		n.chans[key] = ch
	}
	return ch
}

func (n *notifier) notify(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.chans[key]; ok {
		close(ch)
		delete(n.chans, key)
	}
}
