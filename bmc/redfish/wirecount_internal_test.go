package redfish

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A connection counts toward the request that first uses it, not the one
// whose wait made net/http dial it: that request may have got a connection
// another request freed, and finished (its job reading its Driver's Stats)
// before the dial completed. One nobody used counts toward whoever closes
// the session, or toward the owner when it closes before; each once.
func TestConnectionCountedByItsFirstUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	w := newWire(&tls.Config{}, 5*time.Second, 2, nil)
	t.Cleanup(w.CloseIdleConnections)
	var dialer, user, closer counts
	ctx := context.Background()

	// Dialed for dialer's request, which does not use it (as net/http's
	// dial that completes after its request got another connection).
	spare, err := w.base.DialContext(withCounts(ctx, &dialer), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// A request of user's that net/http dials for and uses.
	req, _ := http.NewRequestWithContext(withCounts(ctx, &user), http.MethodGet, srv.URL, nil)
	resp, err := w.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if d, u := dialer.connections.Load(), user.connections.Load(); d != 0 || u != 1 {
		t.Fatalf("dialer counted %d connections, user %d; want 0 and 1 (the one user's request used)", d, u)
	}
	// The session closes: the spare counts toward the closer, once, and
	// not again when it is closed.
	w.countUnused(withCounts(ctx, &closer))
	w.countUnused(withCounts(ctx, &closer))
	_ = spare.Close()
	if c, o := closer.connections.Load(), w.owner.connections.Load(); c != 1 || o != 0 {
		t.Fatalf("closer counted %d connections, owner %d; want the unused one once, toward the closer", c, o)
	}
	// One closed unused before the session ends counts toward the owner.
	late, err := w.base.DialContext(withCounts(ctx, &dialer), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = late.Close()
	w.countUnused(withCounts(ctx, &closer))
	if o, c, d := w.owner.connections.Load(), closer.connections.Load(), dialer.connections.Load(); o != 1 || c != 1 || d != 0 {
		t.Fatalf("owner %d, closer %d, dialer %d; want 1, 1, 0", o, c, d)
	}
	if total := user.connections.Load() + closer.connections.Load() + w.owner.connections.Load(); total != 3 {
		t.Fatalf("%d connections counted; 3 were opened", total)
	}
}
