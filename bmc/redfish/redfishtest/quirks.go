package redfishtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Field quirks: behaviours reported on real BMCs, each behind one Config
// switch (ActionIfMatchRejected, MaxSessions, NoPowerState, NullPowerState,
// UnavailableWhileOff, MediaPatchOnly, BootModeResetUnlessSent,
// LowerCaseLinks). docs/vendors.md
// lists the vendors that show them, the reports, and the tests that use
// them. They sit between the fault middleware (which logs each request as
// the client sent it) and the routes, and cost nothing when all are off.

// quirkState is what the quirks remember between requests.
type quirkState struct {
	// login serializes logins while Config.MaxSessions is set, so the
	// limit holds under concurrent logins.
	login sync.Mutex

	mu sync.Mutex
	// links maps each link handed out in lower case (Config.LowerCaseLinks),
	// without its trailing slash, to the path it stands for.
	links map[string]string
}

// quirks wraps the routes with the configured quirks.
func (s *Server) quirks(next http.Handler) http.Handler {
	c := s.cfg
	if !c.ActionIfMatchRejected && c.MaxSessions <= 0 && !c.NoPowerState && !c.NullPowerState &&
		len(c.UnavailableWhileOff) == 0 && !c.MediaPatchOnly && !c.BootModeResetUnlessSent && !c.LowerCaseLinks {
		return next
	}
	q := &quirkState{links: map[string]string{}}
	rewrites := c.ActionIfMatchRejected || c.NoPowerState || c.NullPowerState || c.MediaPatchOnly || c.LowerCaseLinks
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.LowerCaseLinks {
			r = q.canonical(r)
		}
		path := strings.TrimRight(r.URL.Path, "/")
		switch {
		case c.ActionIfMatchRejected && r.Method == http.MethodPost && strings.Contains(path, "/Actions/") && r.Header.Get("If-Match") != "":
			s.auth(func(w http.ResponseWriter, r *http.Request) {
				noteOf(r, "If-Match on an action")
				writeRedfishError(w, http.StatusPreconditionFailed, "Base.1.18.GeneralError",
					"A general error has occurred. See Resolution for information on how to resolve the error, or @Message.ExtendedInfo if Resolution is not provided.",
					"Base.1.18.PreconditionFailed", "The ETag supplied did not match the ETag required to change this resource.")
			})(w, r)
			return
		case c.MaxSessions > 0 && r.Method == http.MethodPost && path == sessionsURI:
			q.login.Lock()
			defer q.login.Unlock()
			if s.liveSessions() >= c.MaxSessions {
				noteOf(r, "sessions full")
				writeRedfishError(w, http.StatusServiceUnavailable, "Base.1.7.GeneralError",
					"A general error has occurred. See ExtendedInfo for more information",
					"IDRAC.2.4.RAC0218", "The maximum number of user sessions is reached.")
				return
			}
		case len(c.UnavailableWhileOff) > 0 && r.Method == http.MethodGet && s.unavailableWhileOff(path):
			s.auth(func(w http.ResponseWriter, r *http.Request) {
				noteOf(r, "unavailable while off")
				redfishError(w, http.StatusServiceUnavailable, "Ami.1.0.HMCCommuicationFailed", " Indicates that HOSTBMC fails to communicate with HMC ")
			})(w, r)
			return
		case c.MediaPatchOnly && isMediaPath(path):
			switch {
			case strings.Contains(path, "/Actions/"):
				s.auth(func(w http.ResponseWriter, r *http.Request) {
					redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
				})(w, r)
				return
			case r.Method == http.MethodPatch:
				s.auth(func(w http.ResponseWriter, r *http.Request) { s.patchMedia(w, r, path) })(w, r)
				return
			}
		}
		if c.BootModeResetUnlessSent && r.Method == http.MethodPatch && strings.HasPrefix(path, root+"/Systems/") {
			s.resetModeUnlessSent(w, r, next, strings.TrimPrefix(path, root+"/Systems/"))
			return
		}
		if !rewrites {
			next.ServeHTTP(w, r)
			return
		}
		rw := &rewriter{ResponseWriter: w, s: s, q: q}
		next.ServeHTTP(rw, r)
		rw.finish()
	})
}

// resetModeUnlessSent handles a PATCH of system id, then sets its
// BootSourceOverrideMode to Legacy if the PATCH was accepted and set a
// target without naming the mode (Config.BootModeResetUnlessSent).
func (s *Server) resetModeUnlessSent(w http.ResponseWriter, r *http.Request, next http.Handler, id string) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var patch struct{ Boot map[string]json.RawMessage }
	_ = json.Unmarshal(body, &patch)
	_, target := patch.Boot["BootSourceOverrideTarget"]
	_, mode := patch.Boot["BootSourceOverrideMode"]
	rec := &recorder{ResponseWriter: w}
	next.ServeHTTP(rec, r)
	if !target || mode || rec.status != http.StatusNoContent {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sys := s.system(id); sys != nil && sys.bootMode != "Legacy" {
		sys.bootMode = "Legacy"
		sys.etag++
		noteOf(r, "mode reset to Legacy")
	}
}

// writeRedfishError answers a Redfish error whose code and message differ
// from its first @Message.ExtendedInfo entry, as vendors' errors do.
func writeRedfishError(w http.ResponseWriter, status int, code, msg, msgID, extMsg string) {
	writeJSON(w, status, "", map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": msgID, "Message": extMsg, "Severity": "Critical"}},
	}})
}

// liveSessions counts the sessions not logged out nor expired
// (Config.SessionTTL).
func (s *Server) liveSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for tok, sess := range s.sessions {
		if s.cfg.SessionTTL > 0 && now.Sub(sess.lastUsed) > s.cfg.SessionTTL {
			delete(s.sessions, tok)
		}
	}
	return len(s.sessions)
}

// unavailableWhileOff reports whether path is a Config.UnavailableWhileOff
// system, or below one, that reports Off now.
func (s *Server) unavailableWhileOff(path string) bool {
	rest, ok := strings.CutPrefix(path, root+"/Systems/")
	if !ok {
		return false
	}
	id, _, _ := strings.Cut(rest, "/")
	if !slices.Contains(s.cfg.UnavailableWhileOff, id) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(id)
	if sys == nil {
		return false
	}
	s.settle(sys)
	return s.reportedPower(sys) == "Off"
}

// isMediaPath reports whether path is a virtual media device or below one.
func isMediaPath(path string) bool {
	_, dev, ok := strings.Cut(path, "/VirtualMedia/")
	return ok && dev != "" && (strings.HasPrefix(path, managerURI+"/") || strings.HasPrefix(path, root+"/Systems/"))
}

// patchMedia inserts or ejects media by a PATCH of the device
// (Config.MediaPatchOnly), as Lenovo's own scripts for XCC do:
// {"Image": url, "Inserted": true} inserts; {"Image": null} (or "") ejects,
// with or without "Inserted": false. A PATCH that names no Image, or
// Inserted false with an image, is refused (400): it is not the documented
// way to eject.
func (s *Server) patchMedia(w http.ResponseWriter, r *http.Request, path string) {
	base, dev, _ := strings.Cut(path, "/VirtualMedia/")
	if strings.Contains(dev, "/") {
		redfishError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "PATCH is allowed only on a virtual media device")
		return
	}
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	var image *string
	inserted := true
	if _, ok := body["Image"]; !ok {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "Image is required: a URL to insert, null to eject")
		return
	}
	for k, v := range body {
		switch k {
		case "Image":
			if err := json.Unmarshal(v, &image); err != nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Image must be a string or null")
				return
			}
		case "Inserted":
			if err := json.Unmarshal(v, &inserted); err != nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Inserted must be a boolean")
				return
			}
		case "WriteProtected", "TransferProtocolType", "UserName", "Password":
		default:
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "property "+k+" is not known")
			return
		}
	}
	systemID := ""
	if rest, ok := strings.CutPrefix(base, root+"/Systems/"); ok {
		systemID = rest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var set []*media
	switch {
	case systemID == "" && s.cfg.Media == MediaUnderManager:
		set = s.mgrMedia
	case systemID != "" && s.cfg.Media == MediaUnderSystem && s.system(systemID) != nil:
		set = s.system(systemID).media
	}
	m := findMedia(w, set, dev)
	if m == nil {
		return
	}
	eject := image == nil || *image == ""
	switch {
	case !eject && !inserted:
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueConflict", "Inserted false with an Image: set Image null to eject")
		return
	case eject:
		m.image, m.inserted = "", false
		s.stateChanged(r, systemID, "media:eject "+m.id)
	case m.inserted:
		redfishError(w, http.StatusConflict, "Base.1.8.ResourceInUse", "media already inserted; eject first")
		return
	default:
		m.image, m.inserted = *image, true
		s.stateChanged(r, systemID, "media:insert "+m.id+" "+*image)
	}
	writeJSON(w, http.StatusOK, "", map[string]any{"@Message.ExtendedInfo": []any{map[string]any{
		"MessageId": "Base.1.8.Success", "Message": "Successfully Completed Request"}}})
}

// canonical returns r for the path a lower-case link stood for
// (Config.LowerCaseLinks), or r itself.
func (q *quirkState) canonical(r *http.Request) *http.Request {
	key := strings.ToLower(strings.TrimRight(r.URL.Path, "/"))
	q.mu.Lock()
	orig, ok := q.links[key]
	q.mu.Unlock()
	if !ok || orig == r.URL.Path {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = orig, ""
	r2.URL = &u
	return r2
}

// lower is a link in lower case (Config.LowerCaseLinks), remembered for
// the requests that follow it; resource links end with a slash.
func (q *quirkState) lower(link string, resource bool) string {
	orig := strings.TrimRight(link, "/")
	l := strings.ToLower(orig)
	q.mu.Lock()
	q.links[l] = orig
	q.mu.Unlock()
	if resource {
		l += "/"
	}
	return l
}

// isLink reports whether v is a path below the service root.
func isLink(v string) bool {
	return strings.HasPrefix(v, root+"/") && strings.Trim(v, "/") != strings.Trim(root, "/") &&
		!strings.ContainsAny(v, "#$")
}

// rewriter buffers a JSON answer and rewrites it for the quirks; other
// answers (an event stream, an empty 204) pass through, their Location
// header rewritten.
type rewriter struct {
	http.ResponseWriter
	s       *Server
	q       *quirkState
	status  int
	decided bool
	pass    bool
	buf     bytes.Buffer
}

// Unwrap lets http.ResponseController reach the connection (event streams).
func (rw *rewriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

func (rw *rewriter) WriteHeader(code int) {
	if rw.decided {
		return
	}
	rw.decided, rw.status = true, code
	if !strings.HasPrefix(rw.Header().Get("Content-Type"), "application/json") {
		rw.pass = true
		rw.rewriteLocation()
		rw.ResponseWriter.WriteHeader(code)
	}
}

func (rw *rewriter) Write(b []byte) (int, error) {
	if !rw.decided {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.pass {
		return rw.ResponseWriter.Write(b)
	}
	return rw.buf.Write(b)
}

// Flush passes a stream's flush on.
func (rw *rewriter) Flush() {
	if !rw.decided {
		rw.WriteHeader(http.StatusOK)
	}
	if f, ok := rw.ResponseWriter.(http.Flusher); ok && rw.pass {
		f.Flush()
	}
}

func (rw *rewriter) rewriteLocation() {
	if loc := rw.Header().Get("Location"); rw.s.cfg.LowerCaseLinks && isLink(loc) {
		rw.Header().Set("Location", rw.q.lower(loc, false))
	}
}

// finish writes a buffered JSON answer, rewritten.
func (rw *rewriter) finish() {
	if !rw.decided || rw.pass {
		return
	}
	body := rw.buf.Bytes()
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err == nil {
		if m, ok := doc.(map[string]any); ok {
			rw.s.rewriteDoc(m, body)
			doc = rw.s.rewriteLinks(rw.q, m, "")
		}
		if b, err := json.Marshal(doc); err == nil {
			body = b
		}
	}
	rw.rewriteLocation()
	rw.ResponseWriter.WriteHeader(rw.status)
	_, _ = rw.ResponseWriter.Write(body)
}

// rewriteDoc applies the quirks that change one resource.
func (s *Server) rewriteDoc(m map[string]any, body []byte) {
	typ, _ := m["@odata.type"].(string)
	if strings.HasPrefix(typ, "#ComputerSystem.") && !strings.HasPrefix(typ, "#ComputerSystemCollection") {
		switch {
		case s.cfg.NoPowerState:
			delete(m, "PowerState")
		case s.cfg.NullPowerState:
			m["PowerState"] = nil
		}
	}
	if s.cfg.MediaPatchOnly && strings.HasPrefix(typ, "#VirtualMedia.") {
		delete(m, "Actions")
	}
	if _, has := m["@odata.etag"]; s.cfg.ActionIfMatchRejected && !has && m["@odata.id"] != nil && m["error"] == nil {
		h := fnv.New32a()
		_, _ = h.Write(body)
		m["@odata.etag"] = fmt.Sprintf(`W/"%08X"`, h.Sum32())
	}
}

// rewriteLinks puts every link of v in lower case (Config.LowerCaseLinks).
func (s *Server) rewriteLinks(q *quirkState, v any, key string) any {
	if !s.cfg.LowerCaseLinks {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = s.rewriteLinks(q, e, k)
		}
	case []any:
		for i, e := range t {
			t[i] = s.rewriteLinks(q, e, key)
		}
	case string:
		if isLink(t) {
			return q.lower(t, key == "@odata.id")
		}
	}
	return v
}
