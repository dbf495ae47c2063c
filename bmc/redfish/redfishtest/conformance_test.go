package redfishtest_test

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func decode(t *testing.T, what, body string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
	return doc
}

// TestConformance pins the Redfish protocol details independent clients and
// schema validators rely on (issue 12, item 13).
func TestConformance(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2, Media: redfishtest.MediaUnderSystem})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	if got := cl.login("admin", "redfishtest-secret"); got != 201 {
		t.Fatalf("login: %d, want 201", got)
	}

	t.Run("ODataTypeOnEveryResource", func(t *testing.T) {
		for path, typ := range map[string]string{
			"/redfish/v1/":                          "#ServiceRoot.",
			"/redfish/v1/SessionService":            "#SessionService.",
			"/redfish/v1/SessionService/Sessions":   "#SessionCollection.SessionCollection",
			"/redfish/v1/Systems":                   "#ComputerSystemCollection.ComputerSystemCollection",
			"/redfish/v1/Chassis":                   "#ChassisCollection.ChassisCollection",
			"/redfish/v1/Chassis/1":                 "#Chassis.",
			"/redfish/v1/Managers":                  "#ManagerCollection.ManagerCollection",
			"/redfish/v1/Systems/1/VirtualMedia":    "#VirtualMediaCollection.VirtualMediaCollection",
			"/redfish/v1/SessionService/Sessions/1": "#Session.",
			"/redfish/v1/Systems/2":                 "#ComputerSystem.",
			"/redfish/v1/Managers/BMC":              "#Manager.",
			"/redfish/v1/Systems/2/VirtualMedia/CD": "#VirtualMedia.",
		} {
			resp, body := cl.do("GET", path, "", nil)
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d", path, resp.StatusCode)
				continue
			}
			doc := decode(t, path, body)
			if got, _ := doc["@odata.type"].(string); !strings.HasPrefix(got, typ) {
				t.Errorf("GET %s: @odata.type %q, want %s...", path, got, typ)
			}
			if name, _ := doc["Name"].(string); name == "" {
				t.Errorf("GET %s: no Name", path)
			}
			if v := resp.Header.Get("OData-Version"); v != "4.0" {
				t.Errorf("GET %s: OData-Version %q, want 4.0", path, v)
			}
		}
	})

	t.Run("SessionReadBack", func(t *testing.T) {
		resp, body := cl.do("POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"admin","Password":"redfishtest-secret"}`, nil)
		loc := resp.Header.Get("Location")
		created := decode(t, "login", body)
		if resp.StatusCode != 201 || created["@odata.id"] != loc {
			t.Fatalf("login: %d, @odata.id %v, Location %q", resp.StatusCode, created["@odata.id"], loc)
		}
		resp, body = cl.do("GET", loc, "", nil)
		doc := decode(t, loc, body)
		if resp.StatusCode != 200 || doc["@odata.id"] != loc || doc["UserName"] != "admin" || doc["Password"] != nil {
			t.Fatalf("GET %s: %d %s", loc, resp.StatusCode, body)
		}
		if resp, _ := cl.do("DELETE", loc, "", nil); resp.StatusCode != 204 {
			t.Fatalf("DELETE %s: %d", loc, resp.StatusCode)
		}
		if resp, _ := cl.do("GET", loc, "", nil); resp.StatusCode != 404 {
			t.Fatalf("GET %s after DELETE: %d, want 404", loc, resp.StatusCode)
		}
	})

	t.Run("SessionTimeout", func(t *testing.T) {
		for _, c := range []struct {
			ttl  time.Duration
			want float64
		}{{0, 1800}, {time.Second, 30}, {90*time.Second + time.Millisecond, 91}} {
			srv := redfishtest.NewServer(redfishtest.Config{SessionTTL: c.ttl})
			defer srv.Close()
			_, body := (&client{t: t, srv: srv}).do("GET", "/redfish/v1/SessionService", "", map[string]string{"Authorization": "Basic YWRtaW46cmVkZmlzaHRlc3Qtc2VjcmV0"})
			if got := decode(t, "SessionService", body)["SessionTimeout"]; got != c.want {
				t.Errorf("SessionTTL %v: SessionTimeout %v, want %v", c.ttl, got, c.want)
			}
		}
	})

	t.Run("ProtocolDocuments", func(t *testing.T) {
		anon := &client{t: t, srv: srv}
		resp, body := anon.do("GET", "/redfish", "", nil)
		if resp.StatusCode != 200 || decode(t, "/redfish", body)["v1"] != "/redfish/v1/" {
			t.Fatalf("GET /redfish: %d %s", resp.StatusCode, body)
		}
		resp, body = anon.do("GET", "/redfish/v1/$metadata", "", nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/xml") {
			t.Fatalf("GET $metadata: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var edmx struct {
			XMLName    xml.Name
			Version    string `xml:"Version,attr"`
			References []struct {
				URI string `xml:"Uri,attr"`
			} `xml:"Reference"`
		}
		if err := xml.Unmarshal([]byte(body), &edmx); err != nil || edmx.XMLName.Local != "Edmx" || edmx.Version != "4.0" || len(edmx.References) == 0 {
			t.Fatalf("$metadata is not a CSDL document (%v): %s", err, body)
		}
		resp, body = anon.do("GET", "/redfish/v1/odata", "", nil)
		doc := decode(t, "odata", body)
		if values, _ := doc["value"].([]any); resp.StatusCode != 200 || len(values) == 0 {
			t.Fatalf("GET /redfish/v1/odata: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		for _, c := range []struct{ method, path, allow string }{
			{"DELETE", "/redfish/v1/Systems/1", "GET, PATCH, HEAD"},
			{"GET", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", "POST"},
			{"POST", "/redfish/v1/Systems", "GET, HEAD"},
			{"PUT", "/redfish/v1/", "GET, HEAD"},
		} {
			resp, body := cl.do(c.method, c.path, "{}", nil)
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
			}
			if _, ok := decode(t, c.path, body)["error"]; !ok {
				t.Errorf("%s %s: no Redfish error body: %s", c.method, c.path, body)
			}
		}
		if resp, _ := cl.do("GET", "/redfish/v1/Nowhere", "", nil); resp.StatusCode != 404 {
			t.Errorf("GET an unknown resource: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("TrailingSlash", func(t *testing.T) {
		for _, p := range []string{"/redfish/", "/redfish/v1/Systems/", "/redfish/v1/Systems/1/", "/redfish/v1/Chassis/"} {
			if resp, _ := cl.do("GET", p, "", nil); resp.StatusCode != 200 {
				t.Errorf("GET %s: %d, want 200", p, resp.StatusCode)
			}
		}
		resp, _ := cl.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset/", `{"ResetType":"On"}`, nil)
		if resp.StatusCode != 204 || srv.System("1").Power != "On" {
			t.Errorf("POST reset with a trailing slash: %d, power %s", resp.StatusCode, srv.System("1").Power)
		}
		srv.ClearRequests()
		cl.do("POST", "/redfish/v1/SessionService/Sessions/", `{"UserName":"admin","Password":"redfishtest-secret"}`, nil)
		for _, r := range srv.Requests() {
			if strings.Contains(r.Body, "redfishtest-secret") {
				t.Fatalf("request log holds a session body: %+v", r)
			}
		}
	})

	t.Run("ChassisLinks", func(t *testing.T) {
		_, body := cl.do("GET", "/redfish/v1/Chassis", "", nil)
		if n := decode(t, "Chassis", body)["Members@odata.count"]; n != float64(1) {
			t.Fatalf("Chassis collection has %v members, want 1", n)
		}
		_, body = cl.do("GET", "/redfish/v1/Chassis/1", "", nil)
		if !strings.Contains(body, `"ComputerSystems":[{"@odata.id":"/redfish/v1/Systems/1"},{"@odata.id":"/redfish/v1/Systems/2"}]`) {
			t.Errorf("chassis does not link both systems: %s", body)
		}
		for _, id := range []string{"1", "2"} {
			_, body = cl.do("GET", "/redfish/v1/Systems/"+id, "", nil)
			if !strings.Contains(body, `"Chassis":[{"@odata.id":"/redfish/v1/Chassis/1"}]`) {
				t.Errorf("system %s has no Links.Chassis: %s", id, body)
			}
		}
	})
}
