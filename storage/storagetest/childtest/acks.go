package childtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
)

// The crash-durability protocol the durable stores share: a child writes
// records and prints "ack <key> <revision>" after each write returned; the
// parent collects acknowledgements, SIGKILLs the child mid-stream, reopens
// the store and looks for every acknowledged record.

// WriteAcked is the child's side: it creates rec/0, rec/1, ... (value
// "<key> payload") in s until killed, acknowledging each on stdout, and
// exits. It gives up after a minute if nobody kills it.
func WriteAcked(s storage.Store) {
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		key := "rec/" + strconv.Itoa(i)
		rev, err := s.Create(ctx, key, []byte(key+" payload"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("ack %s %d\n", key, rev)
	}
	os.Exit(0)
}

// KillAfterAcks is the parent's side: it reads acknowledgements until it
// has n, SIGKILLs the child, and returns every acknowledged key with its
// revision (including those printed just before the kill). A line starting
// with "error", an early exit, or 2 minutes without n acknowledgements fail
// the test.
func (c *Child) KillAfterAcks(t *testing.T, n int) map[string]int64 {
	t.Helper()
	acked := map[string]int64{}
	parse := func(l string) {
		var key string
		var rev int64
		if _, err := fmt.Sscanf(l, "ack %s %d", &key, &rev); err == nil {
			acked[key] = rev
		} else if strings.HasPrefix(l, "error") {
			t.Fatalf("child: %s", l)
		}
	}
	deadline := time.After(2 * time.Minute)
	for len(acked) < n {
		select {
		case l, ok := <-c.Lines():
			if !ok {
				t.Fatalf("child exited after %d acknowledgements", len(acked))
			}
			parse(l)
		case <-deadline:
			t.Fatalf("child acknowledged only %d writes in 2 minutes", len(acked))
		}
	}
	for _, l := range c.Kill() {
		parse(l)
	}
	return acked
}
