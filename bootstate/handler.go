package bootstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bmckit/bmckit/conditions"
)

// HandlerConfig configures a [Handler].
type HandlerConfig struct {
	// MaxBodyBytes limits the request body. Defaults to DefaultMaxBodyBytes
	// (4 KiB).
	MaxBodyBytes int64
	// ClientAddr finds the caller's IP for address binding
	// (StartOptions.AllowedSources). Defaults to RemoteIP (the TCP peer).
	ClientAddr ClientAddr
}

// Handler serves POST /bootstate for a [Tracker]: a booted server posts a
// [Request] and the handler records the signal durably before answering.
// It ignores the request path, so it can be mounted anywhere.
//
// Answers, each with a JSON body ({"error": "..."} on failure):
//
//   - 200: the signal is in the store (or was already: repeats are
//     idempotent and write nothing). The body is a [Response].
//   - 400: malformed JSON, wrong types, unknown fields, bad UUID, attempt
//     ID, signal or message; 413: body over the limit; 405: not POST.
//   - 401: token missing or wrong (with tokens enabled).
//   - 403: a signal callers may not post (not in Config.CallbackSignals),
//     or a caller address outside the attempt's AllowedSources.
//   - 404: no boot attempt was started for the system.
//   - 409: the attempt named is not the system's current one (a late
//     callback from an earlier boot), or it already ended without booting
//     (a callback after its deadline: the attempt is TimedOut and the
//     signal is not recorded). Never retry a 409: nothing will change.
//   - 503 with Retry-After: the store failed; nothing is promised, retry.
//   - 500: anything else, a stored record that does not decode
//     ([ErrCorruptRecord]) included; fetches answer the same.
//
// The bodies of 401, 403, 404, 409, 500 and 503 are fixed per status:
// they name no allowed address, no current attempt and no store error
// (those go to the Tracker's logger only), since the caller may hold a
// valid token yet be at the wrong address or on a stale attempt. Nothing
// is written for any answer but 200.
type Handler struct {
	t      *Tracker
	max    int64
	client ClientAddr
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the /bootstate handler of t.
func NewHandler(t *Tracker, cfg HandlerConfig) *Handler {
	h := &Handler{t: t, max: cfg.MaxBodyBytes, client: cfg.ClientAddr}
	if h.client == nil {
		h.client = RemoteIP
	}
	if h.max <= 0 {
		h.max = DefaultMaxBodyBytes
	}
	return h
}

// Response is the body of a 200 answer.
type Response struct {
	SystemUUID string            `json:"systemUUID"`
	AttemptID  string            `json:"attemptID"`
	Signal     string            `json:"signal"`
	Completed  bool              `json:"completed"`
	Result     conditions.Result `json:"result,omitempty"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: POST a JSON body", r.Method))
		return
	}
	req, err := DecodeRequest(http.MaxBytesReader(w, r.Body, h.max+1), h.max)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, ErrBodyTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, err.Error())
		return
	}
	signal := req.Signal
	if signal == "" {
		signal = SignalBootStateReceived
	}
	if !h.t.callback[signal] {
		writeError(w, http.StatusForbidden, fmt.Sprintf("field \"signal\": %v: %q", ErrSignalNotAllowed, signal))
		return
	}
	if h.t.AuthEnabled() {
		// Authenticate before looking anything up, so unauthenticated
		// callers learn nothing about which systems exist.
		if req.AttemptID == "" {
			writeError(w, http.StatusBadRequest, `field "attemptID" is required when boot tokens are enabled`)
			return
		}
		if err := h.t.checkToken(req.SystemUUID, req.AttemptID, req.Token); err != nil {
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
	}
	msg := req.Message
	if msg == "" {
		msg = fmt.Sprintf("%s posted from %s", signal, r.RemoteAddr)
	}
	src := h.client(r)
	if src == "" {
		src = "unknown"
	}
	rec, err := h.t.recordSignal(r.Context(), req.SystemUUID, req.AttemptID, signal, msg, src)
	if err != nil {
		status := statusOf(err)
		if status >= http.StatusInternalServerError {
			// The store's error can name its internals (a database file
			// path, a driver message): it goes to the log, never to the
			// caller.
			h.t.log.Error(err, "boot state callback not recorded", "systemUUID", req.SystemUUID)
		} else {
			h.t.log.V(1).Info("boot state callback rejected", "systemUUID", req.SystemUUID, "attemptID", req.AttemptID, "error", err.Error())
		}
		refuse(w, err, status)
		return
	}
	writeJSON(w, http.StatusOK, Response{
		SystemUUID: rec.SystemUUID, AttemptID: rec.AttemptID, Signal: signal,
		Completed: rec.Completed(), Result: rec.Result,
	})
}

// statusOf maps tracker errors to HTTP statuses.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrUnknownSystem):
		return http.StatusNotFound
	case errors.Is(err, ErrStaleAttempt), errors.Is(err, ErrAttemptEnded):
		return http.StatusConflict
	case errors.Is(err, ErrSourceNotAllowed):
		return http.StatusForbidden
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	default:
		return failureStatus(err)
	}
}

// failureStatus is the status of a failure to read or write the record,
// the same for callbacks and fetches: 503 (retry) when the store failed,
// 500 for anything else, a record that does not decode
// ([ErrCorruptRecord]) included, since retrying cannot help.
func failureStatus(err error) int {
	if errors.Is(err, ErrStore) && !errors.Is(err, ErrCorruptRecord) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// refuse answers a refusal: status, its fixed body, and Retry-After on a
// 503.
func refuse(w http.ResponseWriter, err error, status int) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, refusalBody(err, status))
}

// refusalBody is the error text of a refusal. It is fixed per status (and,
// for 409, per cause: a stale attempt or one that ended): the details (the attempt that is current, the addresses allowed, the store's
// error) go to the Tracker's logger, never to a caller, who may hold a
// token yet be at the wrong address or on a stale attempt.
func refusalBody(err error, status int) string {
	switch status {
	case http.StatusNotFound:
		return "no boot attempt was started for this system"
	case http.StatusConflict:
		if errors.Is(err, ErrAttemptEnded) {
			return "the boot attempt already ended (timed out or failed); do not retry"
		}
		return "not the system's current boot attempt; do not retry"
	case http.StatusForbidden:
		return "this address may not act for this system"
	case http.StatusUnauthorized:
		return ErrUnauthorized.Error()
	case http.StatusServiceUnavailable:
		return "boot state store unavailable; retry"
	default:
		return "internal error; the signal was not recorded"
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
