package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/oneshot"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
)

// rolloutCmd is "bmcjob rollout": one job template across the servers of
// -servers (or a simulated fleet, -simulate N), with package rollout's
// policy (docs/rollouts.md, "From the command line"). The rollout's record
// and its jobs are kept in -db (bbolt), so the same command run again
// resumes it. Progress goes to standard error (a progress bar redrawn in
// place on a terminal, plain lines otherwise), the result to standard
// output (-json: a JSON object per line, the events then the final status).
// The exit code is 0 only when the rollout's result is Succeeded. The first
// Ctrl-C aborts the rollout (running jobs finish, the result is Aborted);
// the second exits at once, and the same command resumes.
func rolloutCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "-servers FILE -template FILE [-max-unavailable N|P%] [-per-group LABEL=N|LABEL=P%]... [-canary N] [-canary-approval] [-failure-budget N|P%] [-name NAME] [-db PATH] [-json] | -simulate N [-fail P%] [flags]"
	fs := newFlagSet(e, "rollout", synopsis)
	serversPath := fs.String("servers", "", "the servers: JSON lines (one {\"name\", \"bmc\", \"credentialsRef\", \"systemUUID\", \"labels\"} object per line) or a JSON array of them")
	templatePath := fs.String("template", "", "the job every server runs: a job spec file without \"bmc\" (- for standard input); with -simulate, default: BIOS firmware to "+rolloutSimVersion)
	maxUnavail := fs.String("max-unavailable", "1", "at most this many servers (or this percentage of them, e.g. 5%) unavailable at once")
	var perGroup groupLimitsFlag
	fs.Var(&perGroup, "per-group", "LABEL=N or LABEL=P%: at most N (P% of the group) unavailable at once per value of the label; repeatable")
	canary := fs.Int("canary", 0, "this many servers must succeed before any other starts")
	canaryApproval := fs.Bool("canary-approval", false, "after the canary, ask on standard input whether to go on (y: go on, n: abort)")
	budget := fs.String("failure-budget", "0", "failures tolerated (a count, or a percentage of the servers); one more halts the rollout")
	noSkip := fs.Bool("no-skip-check", false, "run every server's job, even on a server already in the wanted state")
	name := fs.String("name", "", "the rollout's name (default: derived from the servers, template and policy, so the same command resumes the same rollout)")
	dbPath := fs.String("db", "", "bbolt file keeping the rollout and its jobs, to resume after a crash (default bmcjob-rollouts.db; with -simulate, memory)")
	asJSON := fs.Bool("json", false, "print a JSON object per line on standard output: every event, then the final status")
	simulate := fs.Int("simulate", 0, "run against N simulated Redfish BMCs (one server each, 10 per rack label) instead of -servers")
	simDelay := fs.Duration("simulate-power-delay", time.Second, "with -simulate: how long a simulated power change takes (a firmware update twice that)")
	failPct := fs.String("fail", "0%", "with -simulate: this percentage of the simulated servers fail their firmware update")
	user := fs.String("user", "", "BMC user name for every server (password from $BMC_PASSWORD); not with -credentials-file")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification (self-signed BMCs)")
	caCert := fs.String("cacert", "", "PEM file of the CA(s) that sign the BMCs' TLS certificates")
	noPassword := fs.Bool("no-password", false, "the BMC account has no password (otherwise $BMC_PASSWORD is required)")
	credsFile := fs.String("credentials-file", "", "JSON credentials file (bmc.FileCredentials): each server's entry is its credentialsRef (default: the template's, else its bmc address as written)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("rollout: unexpected argument %q", pos[0])
	}

	// Flags first: every mistake is reported before anything starts.
	policy := rollout.Policy{Canary: *canary, CanaryApproval: *canaryApproval, NoSkipCheck: *noSkip, MaxUnavailablePerGroup: perGroup}
	if policy.MaxUnavailable, err = rollout.ParseLimit(*maxUnavail); err != nil {
		return fmt.Errorf("-max-unavailable: %w", err)
	}
	if policy.MaxUnavailable.Value == 0 {
		return fmt.Errorf("-max-unavailable: %s: at least 1 (or 1%%)", policy.MaxUnavailable)
	}
	if policy.FailureBudget, err = rollout.ParseLimit(*budget); err != nil {
		return fmt.Errorf("-failure-budget: %w", err)
	}
	if *canary < 0 {
		return fmt.Errorf("-canary: %d is negative", *canary)
	}
	if *name != "" {
		if err := rollout.ValidateName(*name); err != nil {
			return fmt.Errorf("-name: %s", strings.TrimPrefix(err.Error(), "rollout: "))
		}
	}
	switch {
	case *simulate < 0:
		return fmt.Errorf("-simulate: %d: want a number of servers", *simulate)
	case *simulate > rollout.MaxServers:
		return fmt.Errorf("-simulate: %d: at most %d servers", *simulate, rollout.MaxServers)
	case *simulate > 0 && *serversPath != "":
		return errors.New("rollout: give -servers FILE or -simulate N, not both")
	case *simulate == 0 && *serversPath == "":
		fs.Usage()
		return errors.New("rollout: -servers FILE is required (or -simulate N)")
	case *simulate == 0 && *templatePath == "":
		return errors.New("rollout: -template FILE is required: the job spec every server runs (without \"bmc\")")
	}
	fail, err := parsePercent(*failPct)
	if err != nil {
		return fmt.Errorf("-fail: %w", err)
	}
	if fail > 0 && *simulate == 0 {
		return errors.New("-fail: only with -simulate (it makes simulated servers fail)")
	}
	if *simDelay <= 0 {
		return fmt.Errorf("-simulate-power-delay: %s: want a positive duration", *simDelay)
	}
	userGiven := false
	fs.Visit(func(f *flag.Flag) { userGiven = userGiven || f.Name == "user" })

	// The servers, the template and the credentials.
	var (
		servers  []serverAt
		template job.Spec
		creds    bmc.CredentialsResolver
		rfOpts   = redfish.Options{InsecureSkipVerify: *insecure}
	)
	if *caCert != "" {
		pem, err := os.ReadFile(*caCert)
		if err != nil {
			return fmt.Errorf("-cacert: %w", err)
		}
		rfOpts.CACertPEM = pem
	}
	if *templatePath != "" {
		if template, err = readTemplate(*templatePath); err != nil {
			return err
		}
	}
	if *simulate > 0 {
		if *credsFile != "" || userGiven {
			return errors.New("rollout -simulate: the simulated BMCs have their own credentials: drop -credentials-file and -user")
		}
		failing := failingServers(*simulate, fail)
		var fleet *rolloutFleet
		if e.rolloutFleet != nil {
			var done func()
			fleet, done = e.rolloutFleet(*simulate, *simDelay, failing)
			defer done()
		} else {
			fleet = startRolloutFleet(*simulate, *simDelay, failing)
			defer fleet.close()
		}
		for i, s := range fleet.servers {
			servers = append(servers, serverAt{Server: s, where: "simulated server " + strconv.Itoa(i+1)})
		}
		if *templatePath == "" {
			template = job.Spec{Tasks: append(template.Tasks, fleet.template())}
		}
		for i := range template.Tasks {
			fleet.simulatedImage(&template.Tasks[i])
		}
		template.CredentialsRef = "simulated"
		creds = bmc.StaticCredentials{"simulated": fleet.creds}
		fmt.Fprintf(e.stderr, "simulated fleet: %d Redfish BMCs, one server each, 10 to a rack (label rack); %d set to fail their update\n",
			*simulate, len(failing))
	} else {
		if servers, err = readServersFile(*serversPath); err != nil {
			return err
		}
		if creds, err = rolloutCredentials(e, *serversPath, servers, &template, *credsFile, *user, userGiven, *noPassword); err != nil {
			return err
		}
	}
	spec := rollout.Spec{Template: template, Servers: make([]rollout.Server, len(servers)), Policy: policy}
	for i, s := range servers {
		spec.Servers[i] = s.Server
	}
	if err := spec.Validate(); err != nil {
		return rolloutSpecError(err, servers, *serversPath, *templatePath)
	}
	if *name == "" {
		*name = defaultRolloutName(&spec)
	}

	// The store: -db (bbolt), or memory for a simulated fleet that is new
	// on every run anyway.
	var store storage.Store
	where := "memory (-db to keep it)"
	if *dbPath == "" && *simulate == 0 {
		*dbPath = "bmcjob-rollouts.db"
	}
	if *dbPath != "" {
		bs, err := boltstore.Open(*dbPath, boltstore.Options{LockTimeout: -1})
		if err != nil {
			if errors.Is(err, boltstore.ErrLocked) {
				return fmt.Errorf("-db %s: in use by another process (another bmcjob rollout?)", *dbPath)
			}
			return fmt.Errorf("-db: %w", err)
		}
		defer bs.Close()
		store, where = bs, *dbPath
	} else {
		store = memstore.New()
	}

	dialer, err := oneshot.NewDialer(oneshot.Options{Redfish: rfOpts})
	if err != nil {
		return err
	}
	o := rolloutRun{name: *name, spec: spec, store: store, where: where, dialer: dialer, creds: creds, asJSON: *asJSON}
	if *simulate > 0 {
		o.slowPoll = max(20*time.Millisecond, *simDelay/4)
	}
	return runRollout(ctx, e, o)
}

// rolloutRun is what runRollout needs.
type rolloutRun struct {
	name   string
	spec   rollout.Spec
	store  storage.Store
	where  string // where the record is kept, for messages
	dialer bmc.Dialer
	creds  bmc.CredentialsResolver
	asJSON bool
	// slowPoll, when set, is the Stepper's SlowPollInterval (a simulated
	// fleet answers at once: its updates are followed more often than a
	// real BMC's).
	slowPoll time.Duration
}

// runRollout creates the rollout (or resumes it: same name, same spec) and
// runs it to its end, printing its progress and result.
func runRollout(ctx context.Context, e *env, o rolloutRun) error {
	pr := newRolloutPrinter(e, o.name, o.asJSON)
	runner, err := job.NewRunner(job.Config{
		Store: o.store,
		// One process opens -db at a time (bbolt's file lock), so a fixed
		// owner is unique, and a run after a crash takes its locks back
		// at once instead of after their lease.
		Owner:         "bmcjob",
		StepperConfig: job.StepperConfig{Dialer: o.dialer, Credentials: o.creds, SlowPollInterval: o.slowPoll},
	})
	if err != nil {
		return err
	}
	ctl, err := rollout.New(rollout.Config{Runner: runner, Store: o.store, Observer: rollout.Observer{Transition: pr.observe}})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{}, 2)
	go func() { _ = runner.Start(runCtx); stopped <- struct{}{} }()
	go func() { _ = ctl.Start(runCtx); stopped <- struct{}{} }()
	stop := func() {
		cancel()
		<-stopped
		<-stopped
	}
	defer func() {
		if stopped != nil {
			stop()
		}
	}()

	r, err := ctl.Get(ctx, o.name)
	switch {
	case err == nil:
		if !sameSpec(&r.Spec, &o.spec) {
			return fmt.Errorf("rollout %q in %s has other servers, template or policy: give another -name (or -db)", o.name, o.where)
		}
		fmt.Fprintf(e.stderr, "resuming rollout %s (%s)\n", o.name, o.where)
	case errors.Is(err, storage.ErrNotFound):
		if _, err := ctl.Create(ctx, o.name, o.spec); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "rollout %s: %d servers, max unavailable %s, kept in %s\n", o.name, len(o.spec.Servers), o.spec.Policy.MaxUnavailable, o.where)
	default:
		return err
	}

	printerDone := make(chan struct{})
	printerStop := make(chan struct{})
	go func() { pr.run(ctl, printerStop); close(printerDone) }()
	stopPrinter := func() {
		close(printerStop)
		<-printerDone
	}

	// The first Ctrl-C aborts (in-flight jobs finish); the second ends ctx.
	var aborted atomic.Bool
	e.interrupts.handle(func() bool {
		if aborted.Swap(true) {
			return false
		}
		pr.line("Ctrl-C: aborting the rollout: running jobs finish, nothing new starts (Ctrl-C again to exit at once; the same command resumes)")
		go func() {
			if err := ctl.Abort(context.WithoutCancel(ctx), o.name); err != nil {
				pr.line("abort: " + err.Error())
			}
		}()
		return true
	})
	defer e.interrupts.handle(nil)

	approvalErr := make(chan error, 1)
	if o.spec.Policy.CanaryApproval && o.spec.Policy.Canary > 0 {
		go askApproval(runCtx, e, ctl, o.name, pr, approvalErr)
	}
	type waited struct {
		r   *rollout.Rollout
		err error
	}
	waitc := make(chan waited, 1)
	go func() {
		r, err := ctl.Wait(runCtx, o.name)
		waitc <- waited{r, err}
	}()
	var w waited
	select {
	case w = <-waitc:
	case err := <-approvalErr:
		stop()
		stopped = nil
		stopPrinter()
		return err
	case <-ctx.Done():
	}
	if ctx.Err() != nil || w.err != nil {
		stop()
		stopped = nil
		stopPrinter()
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: rollout %s is kept in %s; run the same command to resume it", o.name, o.where)
		}
		return fmt.Errorf("waiting for rollout %s: %w", o.name, w.err)
	}
	// Stop the passes, so that every event of the completing write was
	// reported, then print the rest and the result.
	stop()
	stopped = nil
	stopPrinter()
	return pr.result(w.r)
}

// askApproval waits for the canary to succeed, then asks on e.stdin: y
// approves it, n aborts; a closed input ends the command (the rollout
// waits in its record; the same command asks again).
func askApproval(ctx context.Context, e *env, ctl *rollout.Controller, name string, pr *rolloutPrinter, errc chan<- error) {
	r, err := ctl.WaitFor(ctx, name, func(r *rollout.Rollout) bool {
		return r.Status.Completed() || r.Control.CanaryApproved || r.Control.Aborted || awaitingApproval(r)
	})
	if err != nil || !awaitingApproval(r) {
		return
	}
	in := e.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	sc := bufio.NewScanner(in)
	for {
		pr.line(fmt.Sprintf("the canary (%d servers) succeeded: go on with the rollout? [y/n] ", r.Status.Canary.Size))
		if !sc.Scan() {
			errc <- fmt.Errorf("rollout %s waits for the approval of its canary, and standard input ended: run the same command again to be asked again", name)
			return
		}
		switch strings.ToLower(strings.TrimSpace(sc.Text())) {
		case "y", "yes":
			if err := ctl.ApproveCanary(ctx, name); err != nil {
				errc <- fmt.Errorf("approving the canary: %w", err)
			}
			return
		case "n", "no":
			pr.line("not approved: aborting the rollout")
			if err := ctl.Abort(ctx, name); err != nil {
				errc <- fmt.Errorf("aborting: %w", err)
			}
			return
		}
	}
}

func awaitingApproval(r *rollout.Rollout) bool {
	for _, c := range r.Status.Conditions {
		if c.Reason == rollout.ReasonAwaitingApproval {
			return true
		}
	}
	return false
}

// sameSpec reports whether two specs are the same rollout (as stored).
func sameSpec(a, b *rollout.Spec) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// defaultRolloutName is "rollout-" and a hash of the spec: the same
// command (same servers, template and policy) names the same rollout, and
// so resumes it.
func defaultRolloutName(spec *rollout.Spec) string {
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return "rollout-" + hex.EncodeToString(sum[:6])
}

// rolloutCredentials makes every server's credentials resolvable: from
// -credentials-file (each server's credentialsRef, else the template's,
// else its bmc address as written, must be an entry there), or from -user
// and $BMC_PASSWORD for every server.
func rolloutCredentials(e *env, path string, servers []serverAt, template *job.Spec, file, user string, userGiven, noPassword bool) (bmc.CredentialsResolver, error) {
	if file != "" {
		if userGiven || e.password != "" {
			return nil, errors.New("rollout -credentials-file: the file's credentials are used: drop -user and unset $BMC_PASSWORD")
		}
		store, err := bmc.OpenFileCredentials(file)
		if err != nil {
			return nil, fmt.Errorf("-credentials-file: %w", err)
		}
		for i := range servers {
			s := &servers[i]
			ref := s.CredentialsRef
			switch {
			case ref == "" && template.CredentialsRef != "":
				ref = template.CredentialsRef
			case ref == "":
				ref = s.BMC
				s.CredentialsRef = ref
			}
			if _, err := store.Resolve(context.Background(), ref); err != nil {
				field := "credentialsRef"
				if s.CredentialsRef == s.BMC && ref == s.BMC {
					field = "bmc (the credentials entry when credentialsRef is empty)"
				}
				return nil, fmt.Errorf("-servers %s: %s: %s: no entry %q in -credentials-file %s", path, s.where, field, clip(ref, 80), store.Path())
			}
		}
		return store, nil
	}
	for _, s := range servers {
		if s.CredentialsRef != "" {
			return nil, fmt.Errorf("-servers %s: %s: credentialsRef: needs -credentials-file (without it every server logs in with -user and $BMC_PASSWORD)", path, s.where)
		}
	}
	if template.CredentialsRef != "" {
		return nil, errors.New("-template: credentialsRef: needs -credentials-file (without it every server logs in with -user and $BMC_PASSWORD)")
	}
	switch {
	case !userGiven:
		return nil, errors.New("-user is required: the BMC account every server logs in as (the password comes from $BMC_PASSWORD), or -credentials-file")
	case e.password == "" && !noPassword:
		return nil, errors.New("the BMC password is missing: set $BMC_PASSWORD (it is never a flag, so it stays out of ps and shell history), pass -no-password, or use -credentials-file")
	}
	template.CredentialsRef = "cli"
	return bmc.StaticCredentials{"cli": {Username: user, Password: e.password}}, nil
}

var serverIndexRE = regexp.MustCompile(`^servers\[(\d+)\]\.`)

// rolloutSpecError words the rollout spec's validation error in the
// command's terms: the -servers line of servers[i], the -template field.
func rolloutSpecError(err error, servers []serverAt, serversPath, templatePath string) error {
	msg := err.Error()
	if i := strings.Index(msg, rollout.ErrInvalidSpec.Error()+": "); i >= 0 {
		msg = msg[i+len(rollout.ErrInvalidSpec.Error())+2:]
	}
	if m := serverIndexRE.FindStringSubmatch(msg); m != nil {
		i, _ := strconv.Atoi(m[1])
		if i < len(servers) {
			file := "-servers " + serversPath
			if serversPath == "" {
				file = "rollout"
			}
			return fmt.Errorf("%s: %s: %s", file, servers[i].where, msg[len(m[0]):])
		}
	}
	if rest, ok := strings.CutPrefix(msg, "template."); ok {
		if templatePath == "" {
			return fmt.Errorf("the built-in template: %s", rest)
		}
		return fmt.Errorf("-template %s: %s", templatePath, rest)
	}
	return fmt.Errorf("rollout: %s", msg)
}

// groupLimitsFlag is -per-group LABEL=N|LABEL=P%, repeatable.
type groupLimitsFlag []rollout.GroupLimit

func (g *groupLimitsFlag) String() string {
	if g == nil {
		return ""
	}
	parts := make([]string, len(*g))
	for i, l := range *g {
		parts[i] = l.Label + "=" + l.Max.String()
	}
	return strings.Join(parts, ",")
}

func (g *groupLimitsFlag) Set(s string) error {
	label, v, ok := strings.Cut(s, "=")
	if !ok || label == "" {
		return fmt.Errorf("%q: want LABEL=N or LABEL=P%%, e.g. rack=2", clip(s, 80))
	}
	l, err := rollout.ParseLimit(v)
	if err != nil {
		return err
	}
	if l.Value == 0 {
		return fmt.Errorf("%s: at least 1 (or 1%%)", s)
	}
	for _, have := range *g {
		if have.Label == label {
			return fmt.Errorf("label %q given twice", label)
		}
	}
	*g = append(*g, rollout.GroupLimit{Label: label, Max: l})
	return nil
}

// parsePercent reads "3%" or "3" (a percentage, 0 to 100).
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("%q: want a percentage from 0%% to 100%%", clip(s, 40))
	}
	return v, nil
}
