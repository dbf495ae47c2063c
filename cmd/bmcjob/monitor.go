package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/oneshot"
	"github.com/bmckit/bmckit/storage/memstore"
)

// monitorCmd is "bmcjob monitor [URL...] [-simulate N]": it watches BMCs
// with package monitor and prints a live table of their Contactable state
// and power until Ctrl-C. With -simulate N it watches a simulated fleet of N
// Redfish machines (10 per simulated endpoint) in which one endpoint answers
// only to other credentials, one goes away, and power changes now and then.
func monitorCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "[BMC URL ...] [-simulate N] [-user NAME] [-interval D] [flags]"
	password, out := e.password, e.stdout
	fs := newFlagSet(e, "monitor", synopsis)
	simulate := fs.Int("simulate", 0, "watch a simulated fleet of N Redfish machines instead of the URLs given")
	user := fs.String("user", "", "BMC user name (password from $BMC_PASSWORD)")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification (self-signed BMCs)")
	interval := fs.Duration("interval", 0, "how often each machine is read (default 3m; 5s with -simulate)")
	every := fs.Duration("every", time.Second, "how often the table is redrawn")
	urls, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if *simulate <= 0 && len(urls) == 0 {
		fs.Usage()
		return errors.New("monitor: give BMC URLs or -simulate N")
	}
	if *simulate > 0 && len(urls) > 0 {
		return errors.New("monitor: give BMC URLs or -simulate N, not both")
	}
	for i, u := range urls {
		if _, err := bmc.ParseEndpoint(u); err != nil {
			// Not the URL itself: a mistyped one may carry a password.
			return fmt.Errorf("monitor: BMC address %d: %s", i+1, strings.TrimPrefix(err.Error(), "bmc: "))
		}
	}
	creds := bmc.StaticCredentials{"cli": {Username: *user, Password: password}}
	var dialer bmc.Dialer
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *simulate > 0 {
		sim := startFleet(*simulate, e.stderr)
		defer sim.close() // after cancel (deferred later, run earlier)
		defer cancel()
		urls, dialer = sim.urls, redfish.NewDialer(redfish.Options{Retries: -1, RequestTimeout: 2 * time.Second})
		creds["cli"] = sim.creds
		if *interval == 0 {
			*interval = 5 * time.Second
		}
		go sim.churn(runCtx, *interval)
	} else {
		userGiven := false
		fs.Visit(func(f *flag.Flag) { userGiven = userGiven || f.Name == "user" })
		if !userGiven {
			return errors.New("-user is required: the BMC account to log in as (the password comes from $BMC_PASSWORD; -user \"\" for an IPMI null user)")
		}
		d, err := oneshot.NewDialer(oneshot.Options{Redfish: redfish.Options{InsecureSkipVerify: *insecure}})
		if err != nil {
			return err
		}
		dialer = d
	}

	mon, err := monitor.New(monitor.Config{Store: memstore.New(), Dialer: dialer, Credentials: creds, Interval: *interval, ReadTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	for _, u := range urls {
		if _, err := mon.Add(ctx, u, "cli"); err != nil {
			return err
		}
	}
	done := make(chan error, 1)
	go func() { done <- mon.Start(runCtx) }()

	tty := isTerminal(out)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	var last string
	for {
		ms, err := mon.List(ctx)
		if err == nil {
			table := renderTable(ms, time.Now())
			switch {
			case tty:
				// Redraw in place: cursor home, clear the screen.
				fmt.Fprint(out, "\x1b[H\x1b[2J"+time.Now().Format("15:04:05")+"  (Ctrl-C to quit)\n"+table)
			case table != last:
				fmt.Fprint(out, "\n"+time.Now().Format("15:04:05")+"\n"+table)
			}
			last = table
		}
		select {
		case <-ctx.Done():
			cancel()
			return <-done
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
}

// renderTable renders machines as an aligned table.
func renderTable(ms []*monitor.Machine, now time.Time) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BMC\tCONTACTABLE\tREASON\tPOWER\tLAST READ\tMESSAGE")
	up, pending, down := 0, 0, map[string]int{}
	for _, m := range ms {
		status, reason, msg := "Unknown", "", ""
		if c := m.Contactable(); c != nil {
			status, reason = string(c.Status), c.Reason
			switch c.Status {
			case conditions.True:
				up++
			case conditions.False:
				msg = strings.TrimPrefix(c.Message, m.BMC+" ") // the BMC is in its own column
				down[c.Reason]++
			default:
				pending++
			}
		}
		power := string(m.Status.Power)
		if power == "" {
			power = "-"
		}
		read := "-"
		if !m.Status.LastReadTime.IsZero() {
			read = m.Status.LastReadTime.Local().Format("15:04:05")
		}
		if len(msg) > 70 {
			msg = msg[:67] + "..."
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", m.BMC, status, reason, power, read, msg)
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "%d machines: %d contactable", len(ms), up)
	for _, r := range slices.Sorted(maps.Keys(down)) {
		fmt.Fprintf(&b, ", %d %s", down[r], r)
	}
	if pending > 0 {
		fmt.Fprintf(&b, ", %d not read yet", pending)
	}
	b.WriteString("\n")
	return b.String()
}

// isTerminal reports whether out is a terminal (not /dev/null, a file or
// a pipe).
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// simFleet is the simulated fleet of -simulate.
type simFleet struct {
	servers  []*redfishtest.Server
	machines []simMachine
	urls     []string
	creds    bmc.Credentials
	gone     int // index of the endpoint that goes away after a while; -1: none
	done     chan struct{}
}

type simMachine struct {
	srv int
	id  string
}

// startFleet starts n machines on simulated Redfish endpoints of up to 10
// systems each, every other one powered on. With more than one endpoint
// (11 machines or more), the last endpoint accepts only other credentials
// (Unauthorized); with 12 or more, the one before it stops answering after a
// while (Unreachable). A fleet on one endpoint answers throughout.
func startFleet(n int, out io.Writer) *simFleet {
	const per = 10
	f := &simFleet{creds: bmc.Credentials{Username: "admin", Password: "sim-" + strconv.Itoa(rand.IntN(1e6))}, gone: -1, done: make(chan struct{})}
	endpoints := (n + per - 1) / per
	for i := 0; i < endpoints; i++ {
		systems := min(per, n-i*per)
		cfg := redfishtest.Config{Systems: systems, Username: f.creds.Username, Password: f.creds.Password, PowerDelay: 2 * time.Second}
		if endpoints >= 2 && i == endpoints-1 {
			cfg.Password = f.creds.Password + "-rotated"
		}
		srv := redfishtest.NewServer(cfg)
		f.servers = append(f.servers, srv)
		for s := 1; s <= systems; s++ {
			id := strconv.Itoa(s)
			if s%2 == 1 {
				srv.SetPower(id, "On")
			}
			f.machines = append(f.machines, simMachine{srv: i, id: id})
			f.urls = append(f.urls, srv.Address(id))
		}
	}
	if n >= 12 && endpoints >= 2 {
		f.gone = endpoints - 2
	}
	fmt.Fprintf(out, "simulated fleet: %d machines on %d Redfish endpoints\n", n, endpoints)
	return f
}

// churn turns a machine on or off every period and, after four, takes one
// endpoint away, until ctx ends.
func (f *simFleet) churn(ctx context.Context, period time.Duration) {
	defer close(f.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if i == 3 && f.gone >= 0 {
			f.servers[f.gone].Close()
		}
		m := f.machines[rand.IntN(len(f.machines))]
		srv := f.servers[m.srv]
		if srv.System(m.id).Power == "On" {
			srv.SetPower(m.id, "Off")
		} else {
			srv.SetPower(m.id, "On")
		}
	}
}

// close stops the churn (its ctx must be done) and the endpoints.
func (f *simFleet) close() {
	<-f.done
	for i, s := range f.servers {
		if i != f.gone {
			s.Close()
		}
	}
}
