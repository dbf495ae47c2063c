package bmcevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

// Config configures a [Receiver].
type Config struct {
	// Store holds the events. Required.
	Store storage.Store
	// Secret keys every BMC's token (at least MinSecretLen bytes).
	// Required; the same secret goes to [ManagerConfig.Secret].
	Secret []byte
	// PreviousSecrets are secrets being rotated out: tokens they keyed
	// are still accepted until the next Ensure re-creates each
	// subscription with a token of Secret. Defaults to none.
	PreviousSecrets [][]byte
	// MaxBodyBytes limits a pushed body. Defaults to DefaultMaxBodyBytes
	// (64 KiB).
	MaxBodyBytes int64
	// Clock stamps Event.Received. Defaults to the wall clock.
	Clock clock.Clock
	// Logger gets refusals (at V(1)) and store failures. Defaults to
	// logr.Discard().
	Logger logr.Logger
	// Observer is told of every event stored, duplicate dropped and push
	// refused (contrib/prometheus: Metrics.EventObserver). Defaults to
	// none.
	Observer Observer
}

// Receiver is the http.Handler BMCs push their events to, at
// <base>/<source>/<token> (see [Destination]). It authenticates each
// push by the source's token, decodes it ([DecodePayload]), stores every
// record under its own key ([EventKey]) and only then answers 200:
//
//   - 200: every record of the body is in the store, now or from an
//     earlier push (a duplicate, dropped). The body is a [Response].
//   - 400: a body that is not a Redfish Event; 413: a body over the limit;
//     405: not POST; 404: a path that is not <source>/<token>.
//   - 401: a token that is not the source's.
//   - 503 with Retry-After: the store failed; some records may be stored,
//     and the BMC's retry finds them as duplicates.
//
// Nothing is stored for any answer but 200 and 503. Bodies of refusals
// are fixed per status; the token is never logged, stored or echoed. The
// handler looks only at the last two segments of the request path, so it
// can be mounted under any prefix (mux.Handle("/bmc-events/", r)).
type Receiver struct {
	store   storage.Store
	secrets [][]byte
	max     int64
	clock   clock.Clock
	log     logr.Logger
	obs     Observer

	stored, duplicates, rejected atomic.Int64
}

var _ http.Handler = (*Receiver)(nil)

// NewReceiver returns a Receiver; it starts nothing.
func NewReceiver(cfg Config) (*Receiver, error) {
	if cfg.Store == nil {
		return nil, errors.New("bmcevents: Config.Store is required")
	}
	secrets, err := validSecrets(cfg.Secret, cfg.PreviousSecrets)
	if err != nil {
		return nil, err
	}
	r := &Receiver{store: cfg.Store, secrets: secrets, max: cfg.MaxBodyBytes, clock: cfg.Clock, log: cfg.Logger, obs: cfg.Observer}
	if r.max <= 0 {
		r.max = DefaultMaxBodyBytes
	}
	if r.clock == nil {
		r.clock = clock.Real{}
	}
	if r.log.GetSink() == nil {
		r.log = logr.Discard()
	}
	return r, nil
}

// Response is the body of a 200 answer.
type Response struct {
	// Stored counts the records stored by this push, Duplicates those
	// already stored by an earlier one.
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
}

// Stats counts what a Receiver did since it was created.
type Stats struct {
	// Stored: records stored. Duplicates: records dropped because an
	// earlier push stored them. Rejected: pushes refused with a 4xx.
	Stored, Duplicates, Rejected int64
}

// Stats returns the counts so far. Safe for concurrent use.
func (r *Receiver) Stats() Stats {
	return Stats{Stored: r.stored.Load(), Duplicates: r.duplicates.Load(), Rejected: r.rejected.Load()}
}

// Destination is the URL a BMC named source pushes to: base (the
// receiver's URL as BMCs reach it, e.g. "https://10.0.0.2:8443/bmc-events")
// + "/" + source + "/" + its token under secret. The URL is a credential:
// never log it.
func Destination(base string, secret []byte, source string) (string, error) {
	if len(secret) < MinSecretLen {
		return "", ErrShortSecret
	}
	if err := ValidateSource(source); err != nil {
		return "", err
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("bmcevents: receiver URL %s: want an absolute http or https URL without query or user info", bmc.QuoteBounded(bmc.RedactURL(base)))
	}
	return strings.TrimSuffix(u.String(), "/") + "/" + source + "/" + token(secret, source), nil
}

// ServeHTTP implements http.Handler.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.refuse(w, http.StatusMethodNotAllowed, "POST a Redfish Event")
		return
	}
	source, tok, ok := splitPath(req.URL.Path)
	if !ok || ValidateSource(source) != nil {
		r.refuse(w, http.StatusNotFound, "no event destination at this path")
		return
	}
	// Authenticate before reading the body: an unauthenticated caller
	// costs one HMAC per secret and learns nothing.
	if !checkToken(r.secrets, source, tok) {
		r.log.V(1).Info("BMC event push refused: wrong token", "source", source, "remote", req.RemoteAddr)
		r.refuse(w, http.StatusUnauthorized, "wrong or missing token for this source")
		return
	}
	p, err := DecodePayload(http.MaxBytesReader(w, req.Body, r.max), r.max)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, ErrBodyTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		r.log.V(1).Info("BMC event push refused", "source", source, "status", status, "error", err.Error())
		r.refuse(w, status, err.Error())
		return
	}
	resp, err := r.store1(req.Context(), source, p)
	if err != nil {
		r.log.Error(err, "BMC events not stored; the BMC will retry", "source", source)
		if r.obs.Refused != nil {
			r.obs.Refused(http.StatusServiceUnavailable)
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "event store unavailable; retry"})
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// store1 stores every record of p with Create: a record already there
// (ErrExists) is a duplicate of an earlier push and is dropped.
func (r *Receiver) store1(ctx context.Context, source string, p Payload) (Response, error) {
	resp, err := storePayload(ctx, r.store, r.obs, source, KindPush, p, r.clock.Now())
	r.stored.Add(int64(resp.Stored))
	r.duplicates.Add(int64(resp.Duplicates))
	return resp, err
}

// splitPath returns the last two segments of p.
func splitPath(p string) (source, tok string, ok bool) {
	p = strings.TrimSuffix(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	tok = p[i+1:]
	p = p[:i]
	j := strings.LastIndexByte(p, '/')
	source = p[j+1:]
	return source, tok, source != "" && tok != ""
}

func (r *Receiver) refuse(w http.ResponseWriter, status int, msg string) {
	r.rejected.Add(1)
	if r.obs.Refused != nil {
		r.obs.Refused(status)
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
