// Command ipmisim serves an [ipmitest.Server] on 127.0.0.1 until it is
// interrupted, for driving the simulator with independent clients such as
// ipmitool (scripts/simulators-clients.sh). It prints the server's UDP port
// on the first line.
//
//	go run ./bmc/ipmi/ipmitest/internal/ipmisim -realistic -power-delay 1s
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

func main() {
	user := flag.String("user", "", `accepted user name (default "admin")`)
	password := flag.String("password", "", `accepted password (default "`+ipmitest.DefaultPassword+`")`)
	realistic := flag.Bool("realistic", false, "start from ipmitest.Realistic(): power delay, one-time boot flag timeout, session timeout, BMC reset downtime")
	powerDelay := flag.Duration("power-delay", -1, "override the power delay (e.g. 1s; default: 0, or Realistic's)")
	bootFlagTimeout := flag.Duration("boot-flag-timeout", -1, "override the one-time boot flag timeout (default: none, or Realistic's 60s)")
	resetDowntime := flag.Duration("reset-downtime", -1, "override the silence after a BMC reset (default: none, or Realistic's)")
	on := flag.Bool("on", false, "start powered on")
	flag.Parse()

	opts := ipmitest.Options{}
	if *realistic {
		opts = ipmitest.Realistic()
	}
	opts.Username, opts.Password, opts.PoweredOn = *user, *password, *on
	set := func(d time.Duration, dst *time.Duration) {
		if d >= 0 {
			*dst = d
		}
	}
	set(*powerDelay, &opts.PowerDelay)
	set(*bootFlagTimeout, &opts.BootFlagTimeout)
	set(*resetDowntime, &opts.BMCResetDowntime)
	srv, err := ipmitest.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ipmisim:", err)
		os.Exit(1)
	}
	defer srv.Close()
	fmt.Println(srv.Endpoint.Port)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
