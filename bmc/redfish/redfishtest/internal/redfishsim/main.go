// Command redfishsim serves a [redfishtest.Server] on 127.0.0.1 until it is
// interrupted, for driving the simulator with independent clients
// (scripts/simulators-clients.sh). It prints the server's base URL, then
// one line per accepted state change.
//
//	go run ./bmc/redfish/redfishtest/internal/redfishsim -sessions body
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func main() {
	sessions := flag.String("sessions", "body", "session login answer: body (201 with the session), nocontent (204) or none (basic auth only)")
	media := flag.String("media", "manager", "where virtual media hangs: manager, system or none")
	systems := flag.Int("systems", 1, "number of computer systems")
	user := flag.String("user", "", `accepted user name (default "admin")`)
	password := flag.String("password", "", `accepted password (default "redfishtest-secret")`)
	flag.Parse()

	cfg := redfishtest.Config{Username: *user, Password: *password, Systems: *systems,
		OnStateChange: func(c redfishtest.StateChange) {
			fmt.Printf("state change %d: system %q %s %s\n", c.Seq, c.System, c.What, c.Note)
		}}
	switch *sessions {
	case "body":
		cfg.Sessions = redfishtest.SessionsCreatedWithBody
	case "nocontent":
		cfg.Sessions = redfishtest.SessionsNoContent
	case "none":
		cfg.Sessions = redfishtest.SessionsNone
	default:
		fmt.Fprintln(os.Stderr, "redfishsim: -sessions must be body, nocontent or none")
		os.Exit(2)
	}
	switch *media {
	case "manager":
		cfg.Media = redfishtest.MediaUnderManager
	case "system":
		cfg.Media = redfishtest.MediaUnderSystem
	case "none":
		cfg.Media = redfishtest.MediaNone
	default:
		fmt.Fprintln(os.Stderr, "redfishsim: -media must be manager, system or none")
		os.Exit(2)
	}
	srv := redfishtest.NewServer(cfg)
	defer srv.Close()
	fmt.Println(srv.URL())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
