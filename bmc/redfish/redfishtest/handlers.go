package redfishtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	root        = "/redfish/v1"
	sessionsURI = root + "/SessionService/Sessions"
	managerURI  = root + "/Managers/BMC"
	chassisURI  = root + "/Chassis/1"
	// auxManagerURI is Config.AuxiliaryManager's controller.
	auxManagerURI = root + "/Managers/AUX"
)

type ctxKey struct{}

// recorder captures the status for the request log.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// entry is the log entry being built for the current request.
type entry struct {
	req    *Request
	change *StateChange // set by stateChanged
}

func contextWith(r *http.Request, e *entry) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, e)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	allow := map[string][]string{} // path pattern -> methods, for 405 answers
	handle := func(method, path string, h http.HandlerFunc) {
		if _, ok := allow[path]; !ok {
			// Any other method on a known resource: 405 with Allow.
			mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
				methods := allow[path]
				if slices.Contains(methods, "GET") {
					methods = append(slices.Clone(methods), "HEAD")
				}
				w.Header().Set("Allow", strings.Join(methods, ", "))
				redfishError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", r405(methods))
			})
		}
		allow[path] = append(allow[path], method)
		mux.HandleFunc(method+" "+path, h)
	}
	handle("GET", "/redfish", s.versions)
	handle("GET", root, s.serviceRoot)
	handle("GET", root+"/$metadata", s.metadata)
	handle("GET", root+"/odata", s.odataService)
	handle("GET", root+"/SessionService", s.auth(s.sessionService))
	handle("POST", sessionsURI, s.createSession)
	handle("GET", sessionsURI, s.auth(s.listSessions))
	handle("GET", sessionsURI+"/{id}", s.auth(s.getSession))
	handle("DELETE", sessionsURI+"/{id}", s.auth(s.deleteSession))
	handle("GET", root+"/Systems", s.auth(s.listSystems))
	handle("GET", root+"/Systems/{id}", s.auth(s.getSystem))
	handle("PATCH", root+"/Systems/{id}", s.auth(s.patchSystem))
	handle("GET", root+"/Systems/{id}/ResetActionInfo", s.auth(s.resetActionInfo))
	handle("POST", root+"/Systems/{id}/Actions/ComputerSystem.Reset", s.auth(s.resetSystem))
	handle("GET", root+"/Chassis", s.auth(s.listChassis))
	handle("GET", chassisURI, s.auth(s.getChassis))
	handle("GET", thermalURI, s.auth(s.getThermal))
	handle("GET", powerURI, s.auth(s.getPower))
	handle("GET", eventServiceURI, s.auth(s.getEventService))
	handle("GET", sseURI, s.auth(s.eventStream))
	handle("GET", root+"/Managers", s.auth(s.listManagers))
	handle("GET", managerURI, s.auth(s.getManager))
	handle("GET", auxManagerURI, s.auth(s.getAuxManager))
	handle("GET", managerURI+"/ResetActionInfo", s.auth(s.managerResetActionInfo))
	handle("POST", managerURI+"/Actions/Manager.Reset", s.auth(s.resetManager))
	handle("GET", managerURI+"/VirtualMedia", s.auth(s.listMedia))
	handle("GET", managerURI+"/VirtualMedia/{dev}", s.auth(s.getMedia))
	handle("POST", managerURI+"/VirtualMedia/{dev}/Actions/{action}", s.auth(s.mediaAction))
	handle("GET", root+"/Systems/{id}/VirtualMedia", s.auth(s.listMedia))
	handle("GET", root+"/Systems/{id}/VirtualMedia/{dev}", s.auth(s.getMedia))
	handle("POST", root+"/Systems/{id}/VirtualMedia/{dev}/Actions/{action}", s.auth(s.mediaAction))
	s.firmwareRoutes(handle)
	s.inventoryRoutes(handle)
	s.biosRoutes(handle)
	s.secureBootRoutes(handle)
	s.bootOrderRoutes(handle)
	s.logRoutes(handle)
	s.subscriptionRoutes(handle)
	s.locatorRoutes(handle)
	s.accountRoutes(handle) // accounts.go
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
	})
	return s.faults(s.quirks(trimSlash(mux))) // quirks.go
}

func r405(methods []string) string {
	return "method not allowed on this resource; allowed: " + strings.Join(methods, ", ")
}

// trimSlash routes a path with a trailing slash like the path without it
// (/redfish/v1/Systems/ is /redfish/v1/Systems), as Redfish services do.
func trimSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path = strings.TrimRight(p, "/")
			if u.Path == "" {
				u.Path = "/"
			}
			u.RawPath = ""
			r2.URL = &u
			r = r2
		}
		next.ServeHTTP(w, r)
	})
}

// faults logs every request and injects the configured failures.
func (s *Server) faults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := Request{Method: r.Method, Path: r.URL.Path, IfMatch: r.Header.Get("If-Match")}
		w.Header().Set("OData-Version", "4.0")
		if !strings.EqualFold(strings.TrimRight(r.URL.Path, "/"), firmwarePushURI) {
			// Firmware uploads are streamed to their handler, not logged.
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			// Any case: links may be lower-case (Config.LowerCaseLinks).
			if len(body) > 0 && !strings.EqualFold(strings.TrimRight(r.URL.Path, "/"), sessionsURI) {
				req.Body = string(redactPasswords(body)) // accounts.go
			}
		}
		s.mu.Lock()
		req.Time = s.now()
		if req.Time.Before(s.downUntil) {
			// Restarting after a Manager.Reset: no answer at all.
			req.Note = "down"
			s.log = append(s.log, req)
			s.mu.Unlock()
			dropConnection(w)
			return
		}
		if limit, ok := s.admit(req.Time); !ok {
			req.Note, req.Status = "over limit", http.StatusServiceUnavailable
			s.log = append(s.log, req)
			s.mu.Unlock()
			s.overLimit.Add(1)
			w.Header().Set("Retry-After", "1")
			redfishError(w, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable",
				"too many requests: this endpoint serves "+strconv.FormatFloat(limit, 'g', -1, 64)+" per second")
			return
		}
		f := FaultNone
		fn := s.faultFunc
		if fn == nil && s.faultRate > 0 && s.rng.Float64() < s.faultRate {
			f = s.cfg.Faults.Kinds[s.rng.Intn(len(s.cfg.Faults.Kinds))]
		}
		s.mu.Unlock()
		if fn != nil {
			// Called without the lock, so it may call Server methods.
			f = fn(r.Method, r.URL.Path)
		}
		req.Fault = f
		rec := &recorder{ResponseWriter: w}
		defer func() {
			req.Status = rec.status
			s.mu.Lock()
			s.log = append(s.log, req)
			s.mu.Unlock()
		}()
		switch f {
		case Fault500:
			redfishError(rec, http.StatusInternalServerError, "Base.1.8.InternalError", "injected internal error")
			return
		case Fault400:
			redfishError(rec, http.StatusBadRequest, "Base.1.8.GeneralError", "injected: request refused")
			return
		case Fault503:
			rec.Header().Set("Retry-After", "1")
			redfishError(rec, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable", "injected: service temporarily unavailable")
			return
		case FaultReset:
			dropConnection(w)
			return
		case FaultSlow:
			t := time.NewTimer(s.cfg.Faults.SlowDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		e := &entry{req: &req}
		if f == FaultLostAnswer || f == FaultLostAnswer503 || f == FaultLostAnswerSlow {
			// Handled in full, then the answer is lost.
			lost := &recorder{ResponseWriter: discardWriter{h: http.Header{}}}
			next.ServeHTTP(lost, r.WithContext(contextWith(r, e)))
			s.reportStateChange(e)
			if f == FaultLostAnswer503 {
				rec.Header().Set("Retry-After", "1")
				redfishError(rec, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable", "injected: service temporarily unavailable")
				return
			}
			if f == FaultLostAnswerSlow {
				t := time.NewTimer(s.cfg.Faults.SlowDelay)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
				}
			}
			rec.status = 0
			dropConnection(w)
			return
		}
		next.ServeHTTP(rec, r.WithContext(contextWith(r, e)))
		s.reportStateChange(e)
	})
}

// discardWriter is a ResponseWriter that keeps nothing (FaultLostAnswer).
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

// dropConnection closes the request's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// auth checks X-Auth-Token (when sessions are on) or basic auth.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tok := r.Header.Get("X-Auth-Token"); tok != "" && s.cfg.Sessions != SessionsNone {
			s.mu.Lock()
			sess, ok := s.sessions[tok]
			now := s.now()
			if ok && s.cfg.SessionTTL > 0 && now.Sub(sess.lastUsed) > s.cfg.SessionTTL {
				delete(s.sessions, tok)
				ok = false
			}
			if ok {
				sess.lastUsed = now
			}
			s.mu.Unlock()
			if ok {
				h(w, r)
				return
			}
			redfishError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "the session is not valid or has expired")
			return
		}
		if u, p, ok := r.BasicAuth(); ok {
			if s.validUser(u, p) {
				h(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="redfishtest"`)
		redfishError(w, http.StatusUnauthorized, "Base.1.8.InsufficientPrivilege", "authentication required")
	}
}

func (s *Server) serviceRoot(w http.ResponseWriter, _ *http.Request) {
	doc := map[string]any{
		"@odata.id":      root + "/",
		"@odata.type":    "#ServiceRoot.v1_15_0.ServiceRoot",
		"Id":             "RootService",
		"Name":           "redfishtest",
		"RedfishVersion": "1.15.0",
		"UUID":           "2c5a5f3e-0000-4000-8000-0000000000ff",
		"Systems":        link(root + "/Systems"),
		"Managers":       link(root + "/Managers"),
		"Chassis":        link(root + "/Chassis"),
	}
	if s.cfg.EventStream || s.subscriptionsOn() {
		doc["EventService"] = link(eventServiceURI)
	}
	s.firmwareLinks(doc)
	s.expandFeatures(doc)
	s.biosLinks(doc, "")
	s.accountLinks(doc)
	if s.cfg.Sessions != SessionsNone {
		doc["SessionService"] = link(root + "/SessionService")
		doc["Links"] = map[string]any{"Sessions": link(sessionsURI)}
	}
	writeJSON(w, http.StatusOK, "", doc)
}

func (s *Server) sessionService(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Sessions == SessionsNone {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no SessionService")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": root + "/SessionService", "@odata.type": "#SessionService.v1_1_8.SessionService",
		"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true,
		"SessionTimeout": s.sessionTimeout(), "Sessions": link(sessionsURI),
	})
}

// sessionTimeout is the SessionService's SessionTimeout in seconds:
// Config.SessionTTL rounded up, at least the schema's minimum of 30; 1800 (a
// common BMC default) when sessions do not expire by themselves.
func (s *Server) sessionTimeout() int {
	ttl := s.cfg.SessionTTL
	if ttl <= 0 {
		return 1800
	}
	return max(30, int((ttl+time.Second-1)/time.Second))
}

// versions answers /redfish: the protocol versions served.
func (s *Server) versions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, "", map[string]any{"v1": root + "/"})
}

// metadata answers /redfish/v1/$metadata: a minimal CSDL document
// referencing the DMTF schemas of the resources served.
func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, metadataXML)
}

var metadataXML = func() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">` + "\n")
	for _, ns := range []string{
		"ServiceRoot.v1_15_0", "SessionService.v1_1_8", "Session.v1_6_0", "SessionCollection",
		"ComputerSystem.v1_20_0", "ComputerSystemCollection", "ActionInfo.v1_3_0", "Chassis.v1_23_0",
		"ChassisCollection", "Manager.v1_15_0", "ManagerCollection", "VirtualMedia.v1_6_0",
		"VirtualMediaCollection", "UpdateService.v1_11_0", "SoftwareInventory.v1_10_0",
		"SoftwareInventoryCollection", "TaskService.v1_2_0", "Task.v1_7_4", "TaskCollection",
	} {
		file := strings.SplitN(ns, ".", 2)[0]
		fmt.Fprintf(&b, "  <edmx:Reference Uri=\"http://redfish.dmtf.org/schemas/v1/%s_v1.xml\">\n", file)
		fmt.Fprintf(&b, "    <edmx:Include Namespace=\"%s\"/>\n", file)
		if ns != file {
			fmt.Fprintf(&b, "    <edmx:Include Namespace=\"%s\"/>\n", ns)
		}
		b.WriteString("  </edmx:Reference>\n")
	}
	b.WriteString(`  <edmx:DataServices>
    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">
      <EntityContainer Name="Service" Extends="ServiceRoot.v1_15_0.ServiceContainer"/>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`)
	return b.String()
}()

// odataService answers /redfish/v1/odata: the OData service document.
func (s *Server) odataService(w http.ResponseWriter, _ *http.Request) {
	value := []any{
		map[string]string{"name": "Service", "kind": "Singleton", "url": root + "/"},
		map[string]string{"name": "Systems", "kind": "Singleton", "url": root + "/Systems"},
		map[string]string{"name": "Chassis", "kind": "Singleton", "url": root + "/Chassis"},
		map[string]string{"name": "Managers", "kind": "Singleton", "url": root + "/Managers"},
	}
	if s.cfg.Sessions != SessionsNone {
		value = append(value, map[string]string{"name": "SessionService", "kind": "Singleton", "url": root + "/SessionService"})
	}
	writeJSON(w, http.StatusOK, "", map[string]any{"@odata.context": root + "/$metadata", "value": value})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Sessions == SessionsNone {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no SessionService")
		return
	}
	var body struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "session body is not JSON")
		return
	}
	if !s.validUser(body.UserName, body.Password) {
		redfishError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "invalid user name or password")
		return
	}
	s.mu.Lock()
	s.nextID++
	sess := &session{id: strconv.Itoa(s.nextID), token: newToken(), user: body.UserName, lastUsed: s.now()}
	s.sessions[sess.token] = sess
	s.mu.Unlock()
	s.logins.Add(1)
	loc := sessionsURI + "/" + sess.id
	w.Header().Set("X-Auth-Token", sess.token)
	w.Header().Set("Location", loc)
	if s.cfg.Sessions == SessionsNoContent {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusCreated, "", sessionDoc(sess))
}

func sessionDoc(sess *session) map[string]any {
	return map[string]any{
		"@odata.id": sessionsURI + "/" + sess.id, "@odata.type": "#Session.v1_6_0.Session",
		"Id": sess.id, "Name": "User Session", "UserName": sess.user, "Password": nil,
	}
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		if sess.id == id {
			writeJSON(w, http.StatusOK, "", sessionDoc(sess))
			return
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no session "+id)
}

func (s *Server) listSessions(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	var members []any
	for _, sess := range s.sessions {
		members = append(members, link(sessionsURI+"/"+sess.id))
	}
	s.mu.Unlock()
	writeCollection(w, sessionsURI, "SessionCollection", "Session Collection", members)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, sess := range s.sessions {
		if sess.id == id {
			delete(s.sessions, tok)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no session "+id)
}

func (s *Server) listSystems(w http.ResponseWriter, _ *http.Request) {
	writeCollection(w, root+"/Systems", "ComputerSystemCollection", "Computer System Collection", s.systemLinks())
}

// systemLinks links every system (s.systems is fixed at start).
func (s *Server) systemLinks() []any {
	var links []any
	for _, sys := range s.systems {
		links = append(links, link(root+"/Systems/"+sys.id))
	}
	return links
}

func (s *Server) listChassis(w http.ResponseWriter, _ *http.Request) {
	writeCollection(w, root+"/Chassis", "ChassisCollection", "Chassis Collection", []any{link(chassisURI)})
}

// getChassis answers the one chassis, which holds every system.
func (s *Server) getChassis(w http.ResponseWriter, _ *http.Request) {
	doc := map[string]any{
		"@odata.id": chassisURI, "@odata.type": "#Chassis.v1_23_0.Chassis", "Id": "1", "Name": "Chassis",
		"ChassisType": "RackMount",
		"Links":       map[string]any{"ComputerSystems": s.systemLinks(), "ManagedBy": []any{link(managerURI)}},
	}
	s.mu.Lock()
	s.statusOf(doc, chassisURI)
	s.locatorDoc(doc, chassisURI)
	s.chassisSensorLinks(doc)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, "", doc)
}

// lockSystem takes s.mu, finds the request's system (answering 404 itself,
// with s.mu released, when there is none) and settles its power; with ok,
// the caller releases s.mu.
func (s *Server) lockSystem(w http.ResponseWriter, r *http.Request) (sys *system, ok bool) {
	s.mu.Lock()
	if sys = s.lookup(w, r); sys == nil {
		s.mu.Unlock()
		return nil, false
	}
	s.settle(sys)
	return sys, true
}

// decodeBody decodes r's JSON body into v, answering 400 MalformedJSON
// itself when it is not JSON.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "body is not JSON")
		return false
	}
	return true
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *system {
	sys := s.system(r.PathValue("id"))
	if sys == nil {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no system "+r.PathValue("id"))
	}
	return sys
}

func reported(sys *system) string {
	if sys.pending == nil {
		return sys.power
	}
	if sys.pending.target == "On" {
		return "PoweringOn"
	}
	return "PoweringOff"
}

func (s *Server) getSystem(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	uri := root + "/Systems/" + sys.id
	reset := map[string]any{"target": uri + "/Actions/ComputerSystem.Reset"}
	if s.cfg.ResetTypesInActionInfo {
		reset["@Redfish.ActionInfo"] = uri + "/ResetActionInfo"
	} else {
		reset["ResetType@Redfish.AllowableValues"] = s.cfg.ResetTypes
	}
	etag := fmt.Sprintf(`W/"%d"`, sys.etag)
	boot := map[string]any{}
	values := map[string]string{
		"BootSourceOverrideTarget":  sys.bootTarget,
		"BootSourceOverrideEnabled": sys.bootEnabled,
		"BootSourceOverrideMode":    sys.bootMode,
	}
	for _, k := range s.cfg.BootOverrideProperties {
		boot[k] = values[k]
	}
	if slices.Contains(s.cfg.BootOverrideProperties, "BootSourceOverrideTarget") {
		boot["BootSourceOverrideTarget@Redfish.AllowableValues"] = s.cfg.BootTargets
	}
	if !s.cfg.NoHTTPBootURI {
		boot["HttpBootUri"] = sys.httpBootURI
	}
	doc := map[string]any{
		"@odata.id":   uri,
		"@odata.type": "#ComputerSystem." + s.cfg.SchemaVersion + ".ComputerSystem",
		"@odata.etag": etag,
		"Id":          sys.id,
		"Name":        "System " + sys.id,
		"UUID":        sys.uuid,
		"PowerState":  s.reportedPower(sys),
		"Boot":        boot,
		"Actions":     map[string]any{"#ComputerSystem.Reset": reset},
		"Links":       map[string]any{"ManagedBy": []any{link(managerURI)}, "Chassis": []any{link(chassisURI)}},
	}
	if s.cfg.NoManagedBy {
		doc["Links"] = map[string]any{"Chassis": []any{link(chassisURI)}}
	}
	if s.cfg.Media == MediaUnderSystem {
		doc["VirtualMedia"] = link(uri + "/VirtualMedia")
	}
	s.inventoryLinks(doc, uri)
	s.biosLinks(doc, uri)
	s.secureBootLink(doc, uri)
	s.bootOrderDoc(sys, doc, boot, uri)
	s.statusOf(doc, uri)
	s.locatorDoc(doc, uri)
	s.logServicesLink(doc, uri, sys.id)
	if !s.cfg.NoLastResetTime {
		doc["LastResetTime"] = sys.lastReset.UTC().Format(lastResetLayout)
	}
	writeJSON(w, http.StatusOK, etag, doc)
}

func (s *Server) resetActionInfo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sys := s.lookup(w, r)
	s.mu.Unlock()
	if sys == nil {
		return
	}
	if !s.cfg.ResetTypesInActionInfo {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no ResetActionInfo")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": root + "/Systems/" + sys.id + "/ResetActionInfo", "@odata.type": "#ActionInfo.v1_3_0.ActionInfo",
		"Id": "ResetActionInfo", "Name": "Reset Action Info",
		"Parameters": []any{map[string]any{"Name": "ResetType", "Required": true, "DataType": "String", "AllowableValues": s.cfg.ResetTypes}},
	})
}

// lastResetLayout formats LastResetTime as Redfish DateTimeOffset values
// look ("2026-12-02T10:20:30.5+00:00"), with the fraction of a second a
// change right after another needs to show.
const lastResetLayout = "2006-01-02T15:04:05.999999999-07:00"

var bootFields = []string{"BootSourceOverrideTarget", "BootSourceOverrideEnabled", "BootSourceOverrideMode"}

func (s *Server) patchSystem(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	ifMatch := r.Header.Get("If-Match")
	switch {
	case s.cfg.ETags == ETagsRejected && ifMatch != "":
		redfishError(w, http.StatusBadRequest, "Base.1.8.HeaderInvalid", "If-Match is not supported")
		return
	case s.cfg.ETags == ETagsRequired && ifMatch == "":
		redfishError(w, http.StatusPreconditionRequired, "Base.1.8.PreconditionRequired", "If-Match is required")
		return
	case ifMatch != "" && ifMatch != "*" && strings.Trim(strings.TrimPrefix(ifMatch, "W/"), `"`) != strconv.Itoa(sys.etag):
		redfishError(w, http.StatusPreconditionFailed, "Base.1.8.PreconditionFailed", "ETag does not match")
		return
	}
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	if s.patchLocator(w, r, root+"/Systems/"+sys.id, sys.id, body) {
		return
	}
	for k := range body {
		if k != "Boot" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property "+k+" is not writable")
			return
		}
	}
	var rawBoot map[string]json.RawMessage
	if err := json.Unmarshal(body["Boot"], &rawBoot); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Boot must be an object")
		return
	}
	applyOrder, code, msg := s.takeBootOrder(sys, rawBoot) // bootorder.go
	if code != "" {
		redfishError(w, http.StatusBadRequest, code, msg)
		return
	}
	boot := map[string]string{}
	for k, v := range rawBoot {
		var sv string
		if err := json.Unmarshal(v, &sv); err != nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Boot/"+k+" must be a string")
			return
		}
		boot[k] = sv
	}
	for k := range boot {
		if k == "HttpBootUri" && s.cfg.NoHTTPBootURI {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "property Boot/HttpBootUri is not known")
			return
		}
		if slices.Contains(bootFields, k) && !slices.Contains(s.cfg.BootOverrideProperties, k) {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "property Boot/"+k+" is not known")
			return
		}
		if !slices.Contains(bootFields, k) && k != "HttpBootUri" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property Boot/"+k+" is not writable")
			return
		}
	}
	target, enabled, mode, uri := sys.bootTarget, sys.bootEnabled, sys.bootMode, sys.httpBootURI
	if v, ok := boot["HttpBootUri"]; ok {
		uri = v
	}
	if v, ok := boot["BootSourceOverrideTarget"]; ok {
		if !slices.Contains(s.cfg.BootTargets, v) {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideTarget "+v+" is not allowed")
			return
		}
		target = v
	}
	if v, ok := boot["BootSourceOverrideEnabled"]; ok {
		if v != "Disabled" && v != "Once" && v != "Continuous" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideEnabled "+v+" is not allowed")
			return
		}
		enabled = v
	}
	if v, ok := boot["BootSourceOverrideMode"]; ok {
		if v != "UEFI" && v != "Legacy" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "BootSourceOverrideMode "+v+" is not allowed")
			return
		}
		mode = v
	}
	applyOrder()
	w.WriteHeader(http.StatusNoContent)
	change := "boot:" + target + "/" + enabled
	if _, ok := boot["HttpBootUri"]; ok {
		change += " " + uri
	}
	s.stateChanged(r, sys.id, change)
	if enabled == "Once" && s.cfg.BootOnce == BootOnceStoredAsContinuous {
		enabled = "Continuous"
		noteOf(r, "stored as Continuous")
	}
	if enabled == "Once" && s.cfg.BootOnce == BootOnceIgnored {
		noteOf(r, "ignored")
		return
	}
	sys.bootTarget, sys.bootEnabled, sys.bootMode, sys.httpBootURI = target, enabled, mode, uri
	sys.etag++
	if enabled == "Once" && s.cfg.BootOnce == BootOnceReverted {
		sys.revertAt = s.now().Add(s.cfg.BootOnceRevertAfter)
		s.settle(sys)
	}
}

func (s *Server) resetSystem(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var body struct{ ResetType string }
	if !decodeBody(w, r, &body) {
		return
	}
	rt := body.ResetType
	if !slices.Contains(s.cfg.ResetTypes, rt) {
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "ResetType "+rt+" is not supported")
		return
	}
	if slices.Contains(s.cfg.RefusedResetTypes, rt) {
		redfishError(w, http.StatusNotImplemented, "Base.1.8.ActionNotSupported", "ResetType "+rt+" is not implemented")
		return
	}
	s.stateChanged(r, sys.id, "reset:"+rt)
	if sys.pending != nil && s.cfg.DropDuringTransition {
		sys.dropped++
		noteOf(r, "dropped")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sys.resets[rt]++
	// The state the server will be in once a pending change lands decides.
	on := sys.power == "On"
	if sys.pending != nil {
		on = sys.pending.target == "On"
	}
	switch rt {
	case "On", "ForceOn":
		if !on {
			s.changePower(sys, "On", false)
		}
	case "ForceOff", "GracefulShutdown":
		if on {
			s.changePower(sys, "Off", false)
		}
	case "ForceRestart", "GracefulRestart", "PowerCycle":
		// Like most BMCs, a restart or cycle of an off server powers it on.
		s.changePower(sys, "On", on)
	case "PushPowerButton":
		if on {
			s.changePower(sys, "Off", false)
		} else {
			s.changePower(sys, "On", false)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listManagers(w http.ResponseWriter, _ *http.Request) {
	members := []any{link(managerURI)}
	if s.cfg.AuxiliaryManager {
		members = []any{link(auxManagerURI), link(managerURI)}
	}
	writeCollection(w, root+"/Managers", "ManagerCollection", "Manager Collection", members)
}

func (s *Server) getManager(w http.ResponseWriter, _ *http.Request) {
	reset := map[string]any{"target": managerURI + "/Actions/Manager.Reset"}
	if s.cfg.ManagerResetTypesInActionInfo {
		reset["@Redfish.ActionInfo"] = managerURI + "/ResetActionInfo"
	} else {
		reset["ResetType@Redfish.AllowableValues"] = s.cfg.ManagerResetTypes
	}
	doc := map[string]any{
		"@odata.id": managerURI, "@odata.type": "#Manager.v1_15_0.Manager", "Id": "BMC", "Name": "Manager",
		"ManagerType": "BMC",
		"Links":       map[string]any{"ManagerForServers": s.systemLinks(), "ManagerForChassis": []any{link(chassisURI)}},
		"Actions":     map[string]any{"#Manager.Reset": reset},
	}
	if s.cfg.Media == MediaUnderManager {
		doc["VirtualMedia"] = link(managerURI + "/VirtualMedia")
	}
	s.mu.Lock()
	s.statusOf(doc, managerURI)
	s.logServicesLink(doc, managerURI, "")
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, "", doc)
}

// getAuxManager answers Config.AuxiliaryManager's controller: it manages
// no server and cannot be reset.
func (s *Server) getAuxManager(w http.ResponseWriter, _ *http.Request) {
	if !s.cfg.AuxiliaryManager {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no manager AUX")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": auxManagerURI, "@odata.type": "#Manager.v1_15_0.Manager", "Id": "AUX", "Name": "Auxiliary controller",
		"ManagerType": "AuxiliaryController",
		"Links":       map[string]any{"ManagerForChassis": []any{link(chassisURI)}},
	})
}

func (s *Server) managerResetActionInfo(w http.ResponseWriter, _ *http.Request) {
	if !s.cfg.ManagerResetTypesInActionInfo {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no ResetActionInfo")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": managerURI + "/ResetActionInfo", "@odata.type": "#ActionInfo.v1_3_0.ActionInfo",
		"Id": "ResetActionInfo", "Name": "Reset Action Info",
		"Parameters": []any{map[string]any{"Name": "ResetType", "Required": true, "DataType": "String", "AllowableValues": s.cfg.ManagerResetTypes}},
	})
}

func (s *Server) resetManager(w http.ResponseWriter, r *http.Request) {
	var body struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !slices.Contains(s.cfg.ManagerResetTypes, body.ResetType) {
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "ResetType must be one of "+strings.Join(s.cfg.ManagerResetTypes, ", "))
		return
	}
	s.mu.Lock()
	s.bmcResets++
	s.sessions = map[string]*session{} // a rebooting BMC forgets its sessions
	s.activateFirmware(true)           // BMC firmware staged for this reset
	if d := s.cfg.BMCResetDowntime; d > 0 {
		s.downUntil = s.now().Add(d)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// mediaBase is the collection URI for the request's media set, or "".
func (s *Server) mediaBase(w http.ResponseWriter, r *http.Request) (string, []*media) {
	id := r.PathValue("id")
	if id == "" {
		if s.cfg.Media != MediaUnderManager {
			redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no virtual media under the manager")
			return "", nil
		}
		return managerURI + "/VirtualMedia", s.mgrMedia
	}
	sys := s.lookup(w, r)
	if sys == nil {
		return "", nil
	}
	if s.cfg.Media != MediaUnderSystem {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no virtual media under the system")
		return "", nil
	}
	return root + "/Systems/" + id + "/VirtualMedia", sys.media
}

func (s *Server) listMedia(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, set := s.mediaBase(w, r)
	if base == "" {
		return
	}
	var members []any
	for _, m := range set {
		members = append(members, link(base+"/"+m.id))
	}
	writeCollection(w, base, "VirtualMediaCollection", "Virtual Media Collection", members)
}

func findMedia(w http.ResponseWriter, set []*media, id string) *media {
	for _, m := range set {
		if m.id == id {
			return m
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no virtual media "+id)
	return nil
}

func (s *Server) getMedia(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, set := s.mediaBase(w, r)
	if base == "" {
		return
	}
	m := findMedia(w, set, r.PathValue("dev"))
	if m == nil {
		return
	}
	uri := base + "/" + m.id
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": uri, "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia", "Id": m.id, "Name": "Virtual " + m.id,
		"MediaTypes": m.types, "Image": s.mediaImage(m), "Inserted": m.inserted, "WriteProtected": true,
		"ConnectedVia": map[bool]string{true: "URI", false: "NotConnected"}[m.inserted],
		"Actions": map[string]any{
			"#VirtualMedia.InsertMedia": map[string]any{"target": uri + "/Actions/VirtualMedia.InsertMedia"},
			"#VirtualMedia.EjectMedia":  map[string]any{"target": uri + "/Actions/VirtualMedia.EjectMedia"},
		},
	})
}

func (s *Server) mediaAction(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, set := s.mediaBase(w, r)
	if base == "" {
		return
	}
	m := findMedia(w, set, r.PathValue("dev"))
	if m == nil {
		return
	}
	switch r.PathValue("action") {
	case "VirtualMedia.InsertMedia":
		var body struct {
			Image    string
			Inserted *bool
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Image == "" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "InsertMedia needs an Image")
			return
		}
		if m.inserted {
			redfishError(w, http.StatusConflict, "Base.1.8.ResourceInUse", "media already inserted; eject first")
			return
		}
		m.image, m.inserted = body.Image, body.Inserted == nil || *body.Inserted
		s.stateChanged(r, r.PathValue("id"), "media:insert "+m.id+" "+body.Image)
	case "VirtualMedia.EjectMedia":
		if !m.inserted {
			redfishError(w, http.StatusBadRequest, "Base.1.8.ActionNotSupported", "no media inserted")
			return
		}
		m.image, m.inserted = "", false
		s.stateChanged(r, r.PathValue("id"), "media:eject "+m.id)
	default:
		redfishError(w, http.StatusNotFound, "Base.1.8.ActionNotSupported", "no action "+r.PathValue("action"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func link(uri string) map[string]string { return map[string]string{"@odata.id": uri} }

// writeCollection answers a resource collection of the DMTF schema typ
// (e.g. "ComputerSystemCollection").
func writeCollection(w http.ResponseWriter, uri, typ, name string, members []any) {
	if members == nil {
		members = []any{}
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": uri, "@odata.type": "#" + typ + "." + typ, "Name": name,
		"Members": members, "Members@odata.count": len(members),
	})
}

func writeJSON(w http.ResponseWriter, status int, etag string, doc any) {
	b, err := json.Marshal(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func redfishError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, "", map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": code, "Message": msg}},
	}})
}

// noteOf records what the simulator did with an accepted request. Called
// with s.mu held (the note is on the request's own entry, written by the
// fault middleware after the handler returns).
func noteOf(r *http.Request, note string) {
	if e, ok := r.Context().Value(ctxKey{}).(*entry); ok {
		e.req.Note = note
	}
}

// mediaImage is what the Image property reads: "None" for empty media on
// a Config.EmptyMediaImageNone BMC (AMI).
func (s *Server) mediaImage(m *media) string {
	if m.image == "" && s.cfg.EmptyMediaImageNone {
		return "None"
	}
	return m.image
}
