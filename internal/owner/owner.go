// Package owner names a process among the replicas that share a Store: the
// default Owner of the job Runner's locks and of the machine monitor's claims
// (Default), and of the controller path's system locks (Stable).
package owner

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// Default is host-pid-random: unique among live processes, never the same
// for a restarted one (so a restart cannot take back its old locks at once;
// hosts that want that set a stable name). The Runner and the monitor use
// it: tests and programs run several of them in one process, or several
// processes on one host, without naming them.
func Default() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// PodNameEnv is the environment variable Stable reads first: a pod's name,
// set through the downward API (fieldRef metadata.name).
const PodNameEnv = "POD_NAME"

// Stable is $POD_NAME when it is set: a name that stays the same when the
// same pod restarts its process, so the restarted process takes back its
// own system locks at once instead of waiting a lease for its previous
// self. Otherwise Default (host-pid-random). Not the bare host name: two
// processes on one host (a developer's machine, a test) would share it
// silently, and two live processes with one name both pass a lock. In a
// pod, set POD_NAME from the downward API (fieldRef metadata.name), as the
// shipped manifests do.
func Stable() string {
	if n := os.Getenv(PodNameEnv); n != "" {
		return n
	}
	return Default()
}
