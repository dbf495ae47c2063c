package bootstate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// FetchIdentity names the system (and optionally attempt and token) a
// fetch request is for.
type FetchIdentity struct {
	// SystemUUID, any case. Empty: the request names no system; it is
	// served without recording.
	SystemUUID string
	// AttemptID, optional: empty means the system's current attempt.
	AttemptID string
	// Token, checked only when FetchConfig.RequireToken is set.
	Token string
}

// Extractor finds the identity in a fetch request. An error means the
// request names a system badly; it is served without recording.
type Extractor func(r *http.Request) (FetchIdentity, error)

// UUIDFromPath is the default [Extractor]: the system UUID is the first path
// segment that is a UUID (e.g. /ipxe/4C4C4544-0042-4A10-8031-B2C04F4E4A31 or
// /ignition/<uuid>.ign with the ".ign" suffix stripped), the attempt ID the
// "attempt" query parameter and the token the "token" query parameter.
func UUIDFromPath(r *http.Request) (FetchIdentity, error) {
	q := r.URL.Query()
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if i := strings.IndexByte(seg, '.'); i == 36 {
			seg = seg[:i]
		}
		if u, err := ParseSystemUUID(seg); err == nil {
			return FetchIdentity{SystemUUID: u, AttemptID: q.Get("attempt"), Token: q.Get("token")}, nil
		}
	}
	return FetchIdentity{}, nil
}

// FetchConfig configures [Tracker.FetchMiddleware].
type FetchConfig struct {
	// Signal recorded for each fetch, e.g. SignalIPXEScriptFetched. Required.
	Signal string
	// Extract names the system of a request. Defaults to UUIDFromPath.
	Extract Extractor
	// RequireToken makes fetches without a valid token answer 401 without
	// being served or recorded. Defaults to false: the first fetch of a
	// boot (the iPXE script a DHCP answer points at) usually happens before
	// the server was given any token. Ignored when the tracker runs
	// without tokens.
	RequireToken bool
	// FailOpen serves the request even when the signal could not be
	// written (store down); the signal is then lost. Defaults to false:
	// answer 503 without serving, so the booting server (iPXE and Ignition
	// both retry) asks again and the signal is not lost. When the store
	// cannot be read, the caller's address cannot be checked either:
	// leave FailOpen off when attempts bind addresses and the served
	// script carries a token. Never applies with RequireToken.
	FailOpen bool
	// ClientAddr finds the caller's IP for address binding
	// (StartOptions.AllowedSources): a fetch from another address gets 403,
	// is not served and writes nothing. Defaults to RemoteIP (the TCP peer).
	ClientAddr ClientAddr
}

// FetchMiddleware wraps the host's own iPXE-script or Ignition handler and
// records cfg.Signal for the system a request names, BEFORE calling the
// wrapped handler, which then serves exactly what it would have served.
//
// Requests that name no system, an unknown system, a retired attempt or
// one that already ended are served unchanged and not recorded: what to
// serve them is the host's call. Only a store failure (503 unless
// FailOpen), with RequireToken a bad token (401), or a source address the
// attempt does not allow (403, see StartOptions.AllowedSources) keeps the
// wrapped handler from running.
//
// It panics if cfg.Signal is not a valid signal name (a programming error
// caught at wiring time).
func (t *Tracker) FetchMiddleware(cfg FetchConfig) func(http.Handler) http.Handler {
	if err := ValidateSignal(cfg.Signal); err != nil {
		panic(fmt.Sprintf("bootstate: FetchMiddleware: %v", err))
	}
	extract := cfg.Extract
	if extract == nil {
		extract = UUIDFromPath
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if t.recordFetch(w, r, cfg, extract) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// recordFetch records the fetch and reports whether to serve the request.
//
// The caller's address is checked first, before the attempt or the token
// is looked at: a fetch from an address the system's current attempt does
// not allow gets 403 and is never served, whatever attempt it names (a
// stale, malformed or made-up one included), so a bound machine's script
// or config, which carry its token, is never rendered for another address.
// The check is repeated inside the compare-and-swap that records the
// signal, for an attempt that replaces the current one in between.
func (t *Tracker) recordFetch(w http.ResponseWriter, r *http.Request, cfg FetchConfig, extract Extractor) bool {
	id, err := extract(r)
	if err != nil || id.SystemUUID == "" {
		if err != nil {
			t.log.V(1).Info("fetch names no valid system; not recorded", "error", err.Error())
		}
		return true
	}
	u, err := ParseSystemUUID(id.SystemUUID)
	if err != nil {
		t.log.V(1).Info("fetch names no valid system; not recorded", "error", err.Error())
		return true
	}
	client := cfg.ClientAddr
	if client == nil {
		client = RemoteIP
	}
	src := client(r)
	if src == "" {
		src = "unknown"
	}
	cur, err := t.read(r.Context(), u)
	known := err == nil
	switch {
	case errors.Is(err, ErrUnknownSystem):
		// No attempt, so no binding and no token: the host decides what to
		// serve (below, a required token is refused).
	case err != nil:
		if cfg.RequireToken && t.AuthEnabled() {
			// The token cannot be checked: never serve (FailOpen covers
			// recording, not authentication).
			t.log.Error(err, "fetch token not checked: boot state record unreadable", "systemUUID", u, "signal", cfg.Signal)
			refuse(w, err, failureStatus(err))
			return false
		}
		return t.fetchFailed(w, cfg, u, err)
	case !sourceAllowed(cur.AllowedSources, src):
		return t.fetchFailed(w, cfg, u, fmt.Errorf("bootstate: %w: fetch from %s for system %s", ErrSourceNotAllowed, src, u))
	}
	if id.AttemptID != "" {
		if err := ValidateAttemptID(id.AttemptID); err != nil {
			t.log.V(1).Info("fetch names a malformed attempt; not recorded", "systemUUID", u, "error", err.Error())
			return true
		}
	}
	if cfg.RequireToken && t.AuthEnabled() {
		attempt := id.AttemptID
		if attempt == "" {
			if !known {
				// No attempt, so no token can be valid: refuse, as with a
				// named attempt, rather than serve.
				writeError(w, http.StatusUnauthorized, "no boot attempt is open for this system, so no token is valid")
				return false
			}
			attempt = cur.AttemptID
		}
		if err := t.checkToken(u, attempt, id.Token); err != nil {
			writeError(w, http.StatusUnauthorized, err.Error())
			return false
		}
		id.AttemptID = attempt
	}
	// The path is left out of the message (and the logs): a host's
	// extractor may carry the token in it, and records never hold tokens.
	msg := fmt.Sprintf("fetched with %s from %s", r.Method, r.RemoteAddr)
	if _, err := t.recordSignal(r.Context(), u, id.AttemptID, cfg.Signal, msg, src); err != nil {
		return t.fetchFailed(w, cfg, u, err)
	}
	return true
}

// fetchFailed decides what a recording failure means for the request.
func (t *Tracker) fetchFailed(w http.ResponseWriter, cfg FetchConfig, u string, err error) bool {
	if errors.Is(err, ErrSourceNotAllowed) {
		// Never serve a bound machine's script or config (which may carry
		// its token) to another address. The body names no policy.
		t.log.Info("fetch from an address the boot attempt does not allow; refused", "systemUUID", u, "signal", cfg.Signal, "reason", err.Error())
		refuse(w, err, http.StatusForbidden)
		return false
	}
	if errors.Is(err, ErrUnknownSystem) || errors.Is(err, ErrStaleAttempt) || errors.Is(err, ErrAttemptEnded) {
		t.log.V(1).Info("fetch not recorded", "systemUUID", u, "signal", cfg.Signal, "reason", err.Error())
		return true
	}
	t.log.Error(err, "fetch signal not recorded", "systemUUID", u, "signal", cfg.Signal, "failOpen", cfg.FailOpen)
	if cfg.FailOpen {
		return true
	}
	refuse(w, err, failureStatus(err))
	return false
}
