package redfishtest

import (
	"net/http"
	"strings"
)

// redirects answers requests for a system addressed by one of
// Config.RedirectAliases with 307 Temporary Redirect to the same path under
// the system's canonical URI (/redfish/v1/Systems/<id>), before
// authentication, as BMCs that accept a host name or serial number in the
// address do. Each answer is logged (Status 307, Note "redirect").
func (s *Server) redirects(next http.Handler) http.Handler {
	if len(s.cfg.RedirectAliases) == 0 {
		return next
	}
	prefix := root + "/Systems/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		alias, tail, _ := strings.Cut(rest, "/")
		id, ok := s.cfg.RedirectAliases[alias]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		target := prefix + id
		if tail != "" {
			target += "/" + tail
		}
		s.mu.Lock()
		s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Status: http.StatusTemporaryRedirect,
			IfMatch: r.Header.Get("If-Match"), Note: "redirect", Time: s.now()})
		s.mu.Unlock()
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
}
