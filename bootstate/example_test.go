package bootstate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
)

func Example() {
	ctx := context.Background()
	tr, err := bootstate.NewTracker(bootstate.Config{
		Store:          memstore.New(),
		Clock:          clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Secret:         []byte("a secret of at least 16 bytes"),
		DefaultTimeout: 10 * time.Minute,
		DefaultPolicy:  bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalBootStateReceived),
	})
	if err != nil {
		panic(err)
	}
	const system = "4C4C4544-0042-4A10-8031-B2C04F4E4A31"

	// A job opens the attempt before powering the server on.
	if err := tr.StartBoot(ctx, system, "job-7", 0); err != nil {
		panic(err)
	}

	// The host's iPXE handler, wrapped: the fetch is recorded.
	ipxe := tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "#!ipxe") }))
	ipxe.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/ipxe/"+system, nil))

	done, _, msg, _ := tr.BootResult(ctx, system, "job-7")
	fmt.Println(done, msg)

	// The booted OS posts /bootstate with the token the host embedded.
	token, _ := tr.Token(system, "job-7")
	body := fmt.Sprintf(`{"systemUUID":%q,"attemptID":"job-7","token":%q}`, system, token)
	rr := httptest.NewRecorder()
	bootstate.NewHandler(tr, bootstate.HandlerConfig{}).ServeHTTP(rr, httptest.NewRequest("POST", "/bootstate", strings.NewReader(body)))
	fmt.Println(rr.Code)

	done, result, _, _ := tr.BootResult(ctx, system, "job-7")
	fmt.Println(done, result)
	// Output:
	// false waiting for AllOf(IPXEScriptFetched, BootStateReceived); received IPXEScriptFetched
	// 200
	// true Succeeded
}
