package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// TestRoutesBootFlow plays a booting server against the example's routes:
// iPXE script, the Ignition URL it names, the /bootstate post the Ignition
// unit would make; the record then shows the boot completed.
func TestRoutesBootFlow(t *testing.T) {
	const uuid = "4c4c4544-0042-4a10-8031-b2c04f4e4a31"
	tr, base := startBootServer(t, memstore.New(), nil)
	if _, err := tr.Start(context.Background(), bootstate.StartOptions{SystemUUID: uuid, AttemptID: "t-1"}); err != nil {
		t.Fatal(err)
	}

	get := func(u string) string {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		return string(b)
	}
	script := get(base + "/ipxe/" + strings.ToUpper(uuid))
	ignURL := regexp.MustCompile(`ignition\.config\.url=(\S+)`).FindStringSubmatch(script)
	if ignURL == nil {
		t.Fatalf("no Ignition URL in %q", script)
	}
	var ign struct {
		Systemd struct {
			Units []struct{ Contents string } `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal([]byte(get(ignURL[1])), &ign); err != nil || len(ign.Systemd.Units) != 1 {
		t.Fatalf("ignition: %+v %v", ign, err)
	}
	body := regexp.MustCompile(`--data '([^']+)'`).FindStringSubmatch(ign.Systemd.Units[0].Contents)
	if body == nil {
		t.Fatalf("no callback body in unit %q", ign.Systemd.Units[0].Contents)
	}
	resp, err := http.Post(base+"/bootstate", "application/json", strings.NewReader(body[1]))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /bootstate: %d", resp.StatusCode)
	}
	var rec bootstate.Record
	if err := json.Unmarshal([]byte(get(base+"/status/"+uuid)), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Result != conditions.ResultSucceeded {
		t.Fatalf("record after the flow: %+v", rec)
	}
}

// startBootServer serves the example's routes over loopback, on a tracker
// over store (clk nil: the wall clock) that waits for all three signals. It
// returns the tracker and the server's base URL; the server stops at the end
// of the test.
func startBootServer(t *testing.T, store storage.Store, clk bootstate.Clock) (*bootstate.Tracker, string) {
	t.Helper()
	tr, err := bootstate.NewTracker(bootstate.Config{
		Store: store, Clock: clk, Secret: []byte("example-test-secret-0123456789"),
		DefaultPolicy: bootstate.AllOfSignals(
			bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: routes(tr, base)}}
	srv.Start()
	t.Cleanup(srv.Close)
	return tr, base
}
