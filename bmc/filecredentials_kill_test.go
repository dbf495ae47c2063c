//go:build linux

package bmc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const envCredsFile = "BMCKIT_TEST_CREDS_FILE"

// TestFileCredentialsSIGKILL: a child process rotates one reference's
// credentials in a loop (SetPending "pw-<i>", then Promote), acknowledging
// each write once it returned, and is SIGKILLed 5 times mid-stream; each
// time the file decodes (never torn) and holds the last acknowledged write,
// or the write after it, and the next child goes on from there.
func TestFileCredentialsSIGKILL(t *testing.T) {
	if childtest.IsChild("creds-rotator") {
		credsRotatorChild(os.Getenv(envCredsFile))
		return
	}
	if testing.Short() {
		t.Skip("-short: starts and kills child processes")
	}
	path := filepath.Join(t.TempDir(), "creds.json")
	s, err := bmc.OpenFileCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(context.Background(), "r", bmc.Credentials{Username: "admin", Password: "pw-0"}); err != nil {
		t.Fatal(err)
	}
	for kill := range 5 {
		child := childtest.Start(t, "TestFileCredentialsSIGKILL", "creds-rotator", envCredsFile+"="+path)
		acked := child.KillAfterAcks(t, 40+kill*7)
		last := 0 // the last acknowledged write: 2i-1 is "pending i", 2i "promoted i"
		for k := range acked {
			if n, err := strconv.Atoi(k[len("w/"):]); err == nil && n > last {
				last = n
			}
		}
		s, err := bmc.OpenFileCredentials(path)
		if err != nil {
			t.Fatalf("kill %d: the file does not decode: %v", kill, err)
		}
		cur, err := s.Resolve(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		p, has, _ := s.Pending(context.Background(), "r")
		state := written(cur, p, has)
		if state != last && state != last+1 {
			t.Fatalf("kill %d: the file is at write %d; the last acknowledged one was %d", kill, state, last)
		}
	}
}

// written is which write of the child's loop the stored state is.
func written(cur, p bmc.Credentials, has bool) int {
	i, _ := strconv.Atoi(cur.Password[len("pw-"):])
	if has {
		return 2*i + 1
	}
	return 2 * i
}

// credsRotatorChild goes on rotating from the file's state until killed.
func credsRotatorChild(path string) {
	ctx := context.Background()
	fail := func(err error) { fmt.Println("error", err); os.Exit(1) }
	s, err := bmc.OpenFileCredentials(path)
	if err != nil {
		fail(err)
	}
	cur, _ := s.Resolve(ctx, "r")
	p, has, _ := s.Pending(ctx, "r")
	n := written(cur, p, has)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		n++
		c := bmc.Credentials{Username: "admin", Password: "pw-" + strconv.Itoa((n+1)/2)}
		if n%2 == 1 {
			err = s.SetPending(ctx, "r", c)
		} else {
			err = s.Promote(ctx, "r", c)
		}
		if err != nil {
			fail(err)
		}
		fmt.Printf("ack w/%d %d\n", n, n)
	}
	os.Exit(0)
}
