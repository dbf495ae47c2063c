package job_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// The simulated BMC of the replica tests (sigstop_test.go) in a child process
// of its own, and the log of every request it received: which replica sent
// it (ReplicaHeader), for which job, task and attempt (the X-Bmckit-Call
// tag), when it arrived, what it was.

// ReplicaHeader names the replica (the process) that sent a request; the
// replica children's transport sets it next to the caller tag, and
// SentHeader to the moment (Unix nanoseconds) the request entered it.
const (
	ReplicaHeader = "X-Bmckit-Replica"
	SentHeader    = "X-Bmckit-Sent"
)

const (
	envReqLogSeed    = "BMCKIT_REPLICATEST_SEED"    // the power delays' seed
	envReqLogSystems = "BMCKIT_REPLICATEST_SYSTEMS" // systems the simulator serves
	envReqLogSlow    = "BMCKIT_REPLICATEST_SLOW"    // the fraction of actions answered after reqLogSlowDelay

	reqLogUser, reqLogPassword = "admin", "replica-test-pw"
	// Power changes land this long after the request (uniformly), so jobs
	// are in flight when a replica is stopped.
	reqLogMinPowerDelay = 200 * time.Millisecond
	reqLogMaxPowerDelay = 800 * time.Millisecond
	// Every request is answered this long after it arrived (uniformly), as
	// a BMC takes a while to answer.
	reqLogMinAnswerDelay = 5 * time.Millisecond
	reqLogMaxAnswerDelay = 25 * time.Millisecond
	// A slow action (envReqLogSlow) is applied and answered this long after
	// it arrived, longer than a lease: real BMCs take seconds to accept a
	// reset now and then.
	reqLogSlowDelay = 1200 * time.Millisecond
)

// requestLogSimChild serves the simulated BMC, prints "addr <address>", then
// one line per request as it arrives:
//
//	req <seq> <unix-nanos> <replica|-> <job/task/attempt|-> <method> <path> <sent-unix-nanos|->
//
// and one JSON line per accepted state change (redfishtest.StateChange),
// each written before the request is answered, until it is killed. It
// answers every request 5-25 ms after it arrived, and a fraction
// (envReqLogSlow) of the actions after reqLogSlowDelay.
func requestLogSimChild() {
	seed, _ := strconv.ParseInt(os.Getenv(envReqLogSeed), 10, 64)
	systems, _ := strconv.Atoi(os.Getenv(envReqLogSystems))
	slow, _ := strconv.ParseFloat(os.Getenv(envReqLogSlow), 64)
	var mu sync.Mutex
	var seq int64
	rng := rand.New(rand.NewPCG(uint64(seed), 2)) //nolint:gosec // test randomness
	write := func(b []byte) {
		// Under mu: lines never mix, and seq follows the write order.
		_, _ = os.Stdout.Write(append(b, '\n'))
	}
	dash := func(s string) string {
		if s == "" || strings.ContainsAny(s, " \n") {
			return "-"
		}
		return s
	}
	srv := redfishtest.NewServer(redfishtest.Config{
		Username: reqLogUser, Password: reqLogPassword, Systems: systems,
		PowerDelayFunc: func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return reqLogMinPowerDelay + time.Duration(rng.Int64N(int64(reqLogMaxPowerDelay-reqLogMinPowerDelay)))
		},
		RequestDelayFunc: func(string, string) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return reqLogMinAnswerDelay + time.Duration(rng.Int64N(int64(reqLogMaxAnswerDelay-reqLogMinAnswerDelay)))
		},
		Faults: redfishtest.Faults{
			SlowDelay: reqLogSlowDelay,
			Func: func(method, path string) redfishtest.Fault {
				if slow == 0 || !(loggedRequest{Method: method, Path: path}).stateChanging() {
					return redfishtest.FaultNone
				}
				mu.Lock()
				defer mu.Unlock()
				if rng.Float64() < slow {
					return redfishtest.FaultSlow
				}
				return redfishtest.FaultNone
			},
		},
		OnRequest: func(r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			seq++
			write(fmt.Appendf(nil, "req %d %d %s %s %s %s %s", seq, time.Now().UnixNano(),
				dash(r.Header.Get(ReplicaHeader)), dash(r.Header.Get(redfishtest.CallerHeader)), r.Method, dash(r.URL.Path),
				dash(r.Header.Get(SentHeader))))
		},
		OnStateChange: func(c redfishtest.StateChange) {
			b, err := json.Marshal(c)
			if err != nil {
				panic(err)
			}
			mu.Lock()
			defer mu.Unlock()
			write(b)
		},
	})
	defer srv.Close()
	mu.Lock()
	fmt.Println("addr", srv.Address(""))
	mu.Unlock()
	<-time.After(30 * time.Minute) // a safety net: the parent kills us
}

// loggedRequest is one request as the simulator received it.
type loggedRequest struct {
	Seq     int64
	At      time.Time
	Replica string // "" when untagged
	// Job, Task and Attempt come from the caller tag; Job is "" for a
	// request made outside any job's call (login, logout, service root).
	Job           string
	Task, Attempt int
	Method, Path  string
	// Sent is when the request entered the replica's transport (zero if
	// unknown).
	Sent time.Time
}

// stateChanging reports whether the request asks the BMC to change
// something: a reset action or a PATCH of a system (the boot override).
func (r loggedRequest) stateChanging() bool {
	switch r.Method {
	case http.MethodPost:
		return strings.HasSuffix(r.Path, "/Actions/ComputerSystem.Reset")
	case http.MethodPatch:
		return strings.HasPrefix(r.Path, "/redfish/v1/Systems/")
	}
	return false
}

func (r loggedRequest) String() string {
	who := r.Replica
	if who == "" {
		who = "(untagged)"
	}
	call := "(no job)"
	if r.Job != "" {
		call = fmt.Sprintf("%s task %d attempt %d", r.Job, r.Task, r.Attempt)
	}
	return fmt.Sprintf("#%d %s %s %s %s %s", r.Seq, r.At.Format("15:04:05.000"), who, call, r.Method, r.Path)
}

// parseRequestLine parses a "req ..." line of requestLogSimChild.
func parseRequestLine(l string) (loggedRequest, error) {
	f := strings.Fields(l)
	if len(f) != 8 || f[0] != "req" {
		return loggedRequest{}, fmt.Errorf("not a request line: %q", l)
	}
	seq, err1 := strconv.ParseInt(f[1], 10, 64)
	ns, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return loggedRequest{}, fmt.Errorf("request line %q: bad number", l)
	}
	r := loggedRequest{Seq: seq, At: time.Unix(0, ns), Method: f[5], Path: f[6]}
	if f[3] != "-" {
		r.Replica = f[3]
	}
	if f[4] != "-" {
		if name, tk, at, ok := parseCallerTag(f[4]); ok {
			r.Job, r.Task, r.Attempt = name, tk, at
		}
	}
	if sent, err := strconv.ParseInt(f[7], 10, 64); err == nil {
		r.Sent = time.Unix(0, sent)
	}
	return r, nil
}
