// Package owner names a process among the replicas that share a Store: the
// default Owner of the job Runner's locks and of the machine monitor's claims.
package owner

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// Default is host-pid-random: unique among live processes, never the same
// for a restarted one (so a restart cannot take back its old locks at once;
// hosts that want that set a stable name).
func Default() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
