package main

// The simulators run in a child process (this program with -serve), so that
// the parent's getrusage counts the client alone: job.Runner, memstore and
// the Redfish driver. The child prints one JSON line (simHello) with the
// endpoints' addresses, answers the line "report" on its stdin with one
// JSON line (simReport), and exits when its stdin closes.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bench/internal/measure"
	"github.com/bmckit/bmckit/bench/internal/selfchild"
	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// childEnv marks the child process (a test binary's TestMain looks at it
// too, so that tests run the same child as the program).
const childEnv = "BMCKIT_BENCH_INVENTORY_SERVE"

// passwordEnv hands the child the password its simulators accept (the
// parent picks it; bmc.Credentials never marshals a password).
const passwordEnv = "BMCKIT_BENCH_INVENTORY_PASSWORD"

// simUser is the simulators' user name.
const simUser = "admin"

// simHello is the child's first line.
type simHello struct {
	Addrs    []string // per endpoint: redfishtest.Server.Address("")
	Error    string   `json:",omitempty"`
	Systems  int      // per endpoint
	Expanded bool
	Protocol string
}

// simReport is what the simulators saw.
type simReport struct {
	CPU       time.Duration // the child's own CPU since its servers started
	Endpoints []endpointReport
}

type endpointReport struct {
	Requests    int
	Failed      int // answered other than 2xx, or reset
	Logins      int64
	Connections int64
	// PerSystem counts the requests under /redfish/v1/Systems/<id>, by id.
	PerSystem map[string]int
	// ByKind counts requests by method and path shape, ids replaced
	// ("GET /redfish/v1/Systems/{id}/Processors/{m}").
	ByKind map[string]int
}

// serve is the child's main: endpoints simulators with systems each.
func serve(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	endpoints := fs.Int("endpoints", 10, "")
	systems := fs.Int("per", 100, "")
	expand := fs.Bool("expand", false, "")
	protocol := fs.String("protocol", "redfish", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	if *endpoints < 1 || *systems < 1 || *protocol == "ipmi" && *systems != 1 {
		return enc.Encode(simHello{Error: fmt.Sprintf("-endpoints %d -per %d -protocol %s: want at least 1 each, and one system per IPMI BMC", *endpoints, *systems, *protocol)})
	}
	hello := simHello{Systems: *systems, Expanded: *expand, Protocol: *protocol}
	if *protocol == "ipmi" {
		return serveIPMI(*endpoints, hello, stdin, enc)
	}
	srvs := make([]*redfishtest.Server, *endpoints)
	for i := range srvs {
		srvs[i] = redfishtest.NewServer(redfishtest.Config{Username: simUser, Password: os.Getenv(passwordEnv), Systems: *systems, ExpandQuery: *expand})
		defer srvs[i].Close()
		hello.Addrs = append(hello.Addrs, srvs[i].Address(""))
	}
	return answer(hello, stdin, enc, func(rep *simReport) {
		for _, s := range srvs {
			rep.Endpoints = append(rep.Endpoints, summarize(s))
		}
	})
}

// serveIPMI is the child with n ipmitest BMCs, each with FRU data naming
// its system (product serial number redfishtest.SystemSerial(i)). The
// simulator keeps no request log: the parent counts IPMI commands with the
// jobs' Status.Wire.
func serveIPMI(n int, hello simHello, stdin io.Reader, enc *json.Encoder) error {
	for i := range n {
		fru := ipmitest.EncodeFRU(bmc.BoardInfo{Manufacturer: "bmckit", Product: "ipmitest board", SerialNumber: fmt.Sprintf("B%06d", i+1)},
			bmc.SystemInfo{Manufacturer: "bmckit", Model: "ipmitest", SerialNumber: redfishtest.SystemSerial(i + 1)})
		srv, err := ipmitest.Start(ipmitest.Options{Username: simUser, Password: os.Getenv(passwordEnv), FRU: fru})
		if err != nil {
			return enc.Encode(simHello{Error: fmt.Sprintf("ipmitest BMC %d: %v", i+1, err)})
		}
		defer func() { _ = srv.Close() }()
		hello.Addrs = append(hello.Addrs, srv.URL())
	}
	return answer(hello, stdin, enc, func(*simReport) {})
}

// answer sends hello, then a report for every "report" line until stdin
// closes.
func answer(hello simHello, stdin io.Reader, enc *json.Encoder, fill func(*simReport)) error {
	cpu0 := measure.CPUTime()
	if err := enc.Encode(hello); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() != "report" {
			return fmt.Errorf("serve: unknown command %q", sc.Text())
		}
		rep := simReport{CPU: measure.CPUTime() - cpu0}
		fill(&rep)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	return sc.Err()
}

func summarize(s *redfishtest.Server) endpointReport {
	e := endpointReport{Logins: s.Logins(), Connections: s.Connections(), PerSystem: map[string]int{}, ByKind: map[string]int{}}
	for _, r := range s.Requests() {
		e.Requests++
		if r.Status < 200 || r.Status > 299 {
			e.Failed++
		}
		kind, sys := pathKind(r.Path)
		e.ByKind[r.Method+" "+kind]++
		if sys != "" {
			e.PerSystem[sys]++
		}
	}
	return e
}

// pathKind replaces the system id and member ids in a Redfish path with
// {id} and {m}, and returns the system id ("" for a path not under a
// system).
func pathKind(p string) (kind, system string) {
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		switch segs[i-1] {
		case "Systems":
			system, segs[i] = segs[i], "{id}"
		case "Processors", "Memory", "Storage", "Drives", "EthernetInterfaces", "FirmwareInventory", "Sessions":
			segs[i] = "{m}"
		}
	}
	return strings.Join(segs, "/"), system
}

// sims is the parent's handle on a child.
type sims struct {
	*selfchild.Proc
	out   *json.Decoder
	hello simHello
}

// startSims runs this program's executable as the child.
func startSims(protocol string, endpoints, perEndpoint int, expand bool, password string) (*sims, error) {
	p, err := selfchild.Start([]string{childEnv + "=1", passwordEnv + "=" + password},
		"-endpoints", fmt.Sprint(endpoints), "-per", fmt.Sprint(perEndpoint), fmt.Sprintf("-expand=%v", expand), "-protocol", protocol)
	if err != nil {
		return nil, err
	}
	s := &sims{Proc: p, out: json.NewDecoder(p.Stdout)}
	if err := s.out.Decode(&s.hello); err != nil {
		s.close()
		return nil, fmt.Errorf("simulator process: %w", err)
	}
	if s.hello.Error != "" {
		s.close()
		return nil, fmt.Errorf("simulator process: %s", s.hello.Error)
	}
	return s, nil
}

func (s *sims) report() (simReport, error) {
	var rep simReport
	if _, err := io.WriteString(s.Stdin, "report\n"); err != nil {
		return rep, err
	}
	err := s.out.Decode(&rep)
	return rep, err
}

func (s *sims) close() error { return s.Stop() }
