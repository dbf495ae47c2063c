package redfish

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// TestParseSystemReadsWhatGofishReads checks that the driver's lean decode
// of a ComputerSystem (systemFields) reads each property it keeps exactly
// as gofish's full ComputerSystem did before: on the fuzz seeds and on the
// system document of every vendor personality of redfishtest, each power
// state and boot override included.
func TestParseSystemReadsWhatGofishReads(t *testing.T) {
	docs := map[string][]byte{}
	powers := map[string]schemas.PowerState{} // what each vendor document must read
	for i, s := range systemSeeds {
		docs["seed "+string(rune('0'+i))] = []byte(s)
	}
	for _, v := range redfishtest.Vendors() {
		srv := redfishtest.NewServer(redfishtest.VendorConfig(v))
		t.Cleanup(srv.Close)
		for _, power := range []string{"On", "Off"} {
			srv.SetPower("1", power)
			ep := srv.Endpoint("1")
			req, err := http.NewRequest(http.MethodGet, srv.URL()+ep.Path, nil)
			if err != nil {
				t.Fatal(err)
			}
			cr := srv.Credentials()
			req.SetBasicAuth(cr.Username, cr.Password)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: GET %s: %d %v: %s", v, ep.Path, resp.StatusCode, err, b)
			}
			docs[string(v)+" "+power] = b
			powers[string(v)+" "+power] = schemas.PowerState(power)
		}
	}
	for name, b := range docs {
		var full schemas.ComputerSystem
		fullErr := json.Unmarshal(b, &full)
		doc, err := parseSystem(b, "")
		if fullErr != nil {
			continue // gofish refused it; the lean decode may refuse or read less
		}
		if err != nil {
			t.Errorf("%s: gofish reads it, parseSystem fails: %v\n%s", name, err, b)
			continue
		}
		want := systemFields{ODataID: full.ODataID, ODataEtag: full.ODataEtag, ID: full.ID, UUID: full.UUID,
			PowerState: full.PowerState, LastResetTime: full.LastResetTime,
			Manufacturer: full.Manufacturer, Model: full.Model, SerialNumber: full.SerialNumber, PartNumber: full.PartNumber,
			SKU: full.SKU, BiosVersion: full.BiosVersion}
		got := doc.systemFields
		got.Boot = schemas.Boot{}
		// Status (health.go) is compared as what it maps to.
		if h := resourceHealth("", got.Status); h.Health != bmc.ParseHealth(string(full.Status.Health)) || h.Rollup != bmc.ParseHealth(string(full.Status.HealthRollup)) {
			t.Errorf("%s: Status read %+v, gofish %+v", name, h, full.Status)
		}
		got.Status = nil
		// The Boot's exported properties; gofish also keeps two links
		// (BootOptions, Certificates) in unexported fields the driver
		// never follows.
		gb, fb := reflect.ValueOf(doc.Boot), reflect.ValueOf(full.Boot)
		for i := range gb.NumField() {
			if f := gb.Type().Field(i); f.IsExported() && !reflect.DeepEqual(gb.Field(i).Interface(), fb.Field(i).Interface()) {
				t.Errorf("%s: Boot.%s = %v, gofish read %v", name, f.Name, gb.Field(i), fb.Field(i))
			}
		}
		if p, ok := powers[name]; ok && doc.PowerState != p {
			t.Errorf("%s: PowerState %q, want %q", name, doc.PowerState, p)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parseSystem read\n%+v\ngofish\n%+v", name, got, want)
		}
		var boot struct{ Boot map[string]json.RawMessage }
		_ = json.Unmarshal(b, &boot)
		for _, p := range []string{propTarget, propEnabled, propMode, propHTTPURI} {
			if _, ok := boot.Boot[p]; ok != doc.BootHas[p] {
				t.Errorf("%s: BootHas[%s] = %v, the document says %v", name, p, doc.BootHas[p], ok)
			}
		}
	}
	if len(docs) < 2*len(redfishtest.Vendors()) {
		t.Fatalf("only %d documents compared", len(docs))
	}
}
