//go:build linux

package job_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/syslock"
)

// The replica child of the replica tests (sigstop_test.go): one process that
// plays a Runner replica or a controller replica (a Stepper loop) over a
// PostgreSQL store, run after run, on the parent's commands (stdin):
//
//	start <table-prefix>   open the store with that TablePrefix, start the
//	                       replica, print "started <table-prefix>"
//	stop                   stop it, close the store, print "stopped <prefix>"
//	hang <millis>          block every store call for that long; prints
//	                       "hang <unix-nanos>" and, when it ends, "unhang
//	                       <unix-nanos>"
//
// It prints "upd <job> <0|1>" after each write of a job it made (1: the job
// completed), "relocked <job>" when a controller's Lock let it act for a
// job already completed (relockReporter), and "error ..." (then exits 1)
// when something fails. It exits when its stdin closes.

const (
	envReplicaName   = "BMCKIT_REPLICATEST_NAME"   // the replica's name: Runner Owner, ReplicaHeader
	envReplicaMode   = "BMCKIT_REPLICATEST_MODE"   // "runner" or "controller"
	envReplicaSim    = "BMCKIT_REPLICATEST_SIM"    // the simulator's base address
	envReplicaDSN    = "BMCKIT_REPLICATEST_DSN"    // PostgreSQL
	envReplicaSchema = "BMCKIT_REPLICATEST_SCHEMA" // the store's schema
	envReplicaLease  = "BMCKIT_REPLICATEST_LEASE"  // LeaseDuration, a time.Duration string
	envReplicaDebug  = "BMCKIT_REPLICATEST_DEBUG"  // set: the job package logs to stderr

	replicaPollInterval = 40 * time.Millisecond
)

// replicaOut writes the child's lines; safe for concurrent use.
type replicaOut struct{ mu sync.Mutex }

func (o *replicaOut) printf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

func (o *replicaOut) fail(format string, args ...any) {
	o.printf("error "+format, args...)
	os.Exit(1)
}

// replicaRun is one run's replica: its store and whatever runs over it.
type replicaRun struct {
	prefix string
	sql    *sqlstore.Store
	store  *hangStore
	cancel context.CancelFunc
	done   chan error
}

func replicaChild() {
	out := &replicaOut{}
	name, mode, addr := os.Getenv(envReplicaName), os.Getenv(envReplicaMode), os.Getenv(envReplicaSim)
	lease, err := time.ParseDuration(os.Getenv(envReplicaLease))
	if err != nil {
		out.fail("%s: %v", envReplicaLease, err)
	}
	log := logr.Discard()
	if os.Getenv(envReplicaDebug) != "" {
		log = funcr.New(func(prefix, args string) {
			fmt.Fprintf(os.Stderr, "%s %s %s %s\n", time.Now().Format("15:04:05.000"), name, prefix, args)
		}, funcr.Options{Verbosity: 1})
	}
	var cur *replicaRun
	for cmd := range childtest.Commands() {
		f := strings.Fields(cmd)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "start":
			if cur != nil || len(f) != 2 {
				out.fail("bad command %q", cmd)
			}
			cur = startReplicaRun(out, name, mode, addr, f[1], lease, log)
			out.printf("started %s", cur.prefix)
		case "stop":
			if cur == nil {
				out.fail("stop without a run")
			}
			cur.cancel()
			if err := <-cur.done; err != nil {
				out.fail("run %s: %v", cur.prefix, err)
			}
			if err := cur.sql.Close(context.Background()); err != nil {
				out.fail("close store: %v", err)
			}
			out.printf("stopped %s", cur.prefix)
			cur = nil
		case "hang":
			ms, err := strconv.Atoi(f[1])
			if cur == nil || err != nil {
				out.fail("bad command %q", cmd)
			}
			began, ended := cur.store.hang(time.Duration(ms) * time.Millisecond)
			out.printf("hang %d", began.UnixNano())
			go func() { out.printf("unhang %d", (<-ended).UnixNano()) }()
		default:
			out.fail("unknown command %q", cmd)
		}
	}
	os.Exit(0)
}

func startReplicaRun(out *replicaOut, name, mode, addr, prefix string, lease time.Duration, log logr.Logger) *replicaRun {
	ctx, cancel := context.WithCancel(context.Background())
	sql, err := postgres.Open(ctx, pgtest.WithAppName(os.Getenv(envReplicaDSN), replicaAppName(name)), postgres.Options{
		Store: sqlstore.Options{
			Schema: os.Getenv(envReplicaSchema), TablePrefix: prefix,
			// A replica stopped inside a group commit's transaction holds the
			// store's revision counter: the other replica's writes (its lock
			// renewals too) wait until PostgreSQL ends the stopped session.
			// The default (5 s) is for leases of 30 s; with these 1-second
			// leases the other replica would lose its systems to the stopped
			// one, which would then take them over when it resumes.
			IdleInTransactionTimeout: lease / 4,
		},
	})
	if err != nil {
		out.fail("open store: %v", err)
	}
	rr := &replicaRun{prefix: prefix, sql: sql, store: newHangStore(sql), cancel: cancel, done: make(chan error, 1)}
	dialer := &bmc.SchemeDialer{}
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{
		RequestsPerSecond: -1, // the simulator serves all; the budget would only slow the run
		WrapTransport:     func(next http.RoundTripper) http.RoundTripper { return replicaTagger{name: name, out: out, next: next} },
	}))
	creds := bmc.StaticCredentials{"sim": {Username: reqLogUser, Password: reqLogPassword}}
	upd := func(j *job.Job) {
		done := 0
		if j.Completed() {
			done = 1
		}
		out.printf("upd %s %d", j.Name, done)
	}
	switch mode {
	case "runner":
		r, err := job.NewRunner(job.Config{
			Store: rr.store, StepperConfig: job.StepperConfig{
				Dialer:       dialer,
				Credentials:  creds,
				Logger:       log,
				PollInterval: replicaPollInterval,
			},
			Owner: name, LeaseDuration: lease, ScanInterval: 50 * time.Millisecond,

			OnUpdate: func(j job.Job) { upd(&j) },
		})
		if err != nil {
			out.fail("new runner: %v", err)
		}
		go func() { rr.done <- r.Start(ctx) }()
	case "controller":
		st, err := job.NewStepper(job.StepperConfig{
			Dialer: dialer, Credentials: creds, Logger: log,
			// The process in the lock: the other replica passes Lock for
			// the same job only after this one's lease lapsed.
			Locks: relockReporter{
				Locker: syslock.NewStoreLocker(rr.store, syslock.StoreLockerConfig{LeaseDuration: lease, Owner: name}),
				store:  rr.store, out: out,
			},
			LockRetryInterval: 100 * time.Millisecond,
			PollInterval:      replicaPollInterval,
			// Requeues stay at PollInterval, well inside the lease each
			// step renews.
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
		})
		if err != nil {
			out.fail("new stepper: %v", err)
		}
		c := &controller{store: rr.store, stepper: st, onPersist: upd, scan: 50 * time.Millisecond, retry: 50 * time.Millisecond}
		go func() {
			c.run(ctx)
			rr.done <- st.Close(context.Background())
		}()
	default:
		out.fail("%s=%q: want runner or controller", envReplicaMode, mode)
	}
	return rr
}

// replicaAppName is the application_name of the replica's store sessions,
// so that the parent can see whether a stopped replica was inside a
// transaction (replicaHarness.sigstop).
func replicaAppName(replica string) string { return "bmckit-replica-" + replica }

// replicaTagger names the replica in ReplicaHeader, the moment the request
// entered the replica's transport in SentHeader (before the driver's own
// transport: its budget wait, the fence's check, the wait for a connection)
// and, through callTagger, the job, task and attempt of each request. A
// request that waited longer than connWaitReported for a connection (after
// the fence's check) is reported as "connwait <job/task/attempt> <began>
// <got>" (Unix nanoseconds).
type replicaTagger struct {
	name string
	out  *replicaOut
	next http.RoundTripper
}

const connWaitReported = 100 * time.Millisecond

func (t replicaTagger) RoundTrip(req *http.Request) (*http.Response, error) {
	entered := time.Now()
	var getConn atomic.Int64
	tag := "-"
	if call, ok := job.CallFromContext(req.Context()); ok {
		tag = fmt.Sprintf("%s/%d/%d", call.Job, call.Task, call.Attempt)
	}
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GetConn: func(string) { getConn.Store(time.Now().UnixNano()) },
		GotConn: func(httptrace.GotConnInfo) {
			if began := getConn.Load(); began != 0 {
				if got := time.Now().UnixNano(); time.Duration(got-began) > connWaitReported {
					t.out.printf("connwait %s %d %d", tag, began, got)
				}
			}
		},
	})
	req = req.Clone(ctx)
	req.Header.Set(ReplicaHeader, t.name)
	req.Header.Set(SentHeader, strconv.FormatInt(entered.UnixNano(), 10))
	return callTagger{t.next}.RoundTrip(req)
}
