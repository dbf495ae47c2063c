package redfish

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var systemSeeds = []string{
	`{"@odata.id":"/redfish/v1/Systems/1","Id":"1","UUID":"u","PowerState":"On","Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once","BootSourceOverrideMode":"UEFI","BootSourceOverrideTarget@Redfish.AllowableValues":["None","Pxe","Hdd"]},"Actions":{"#ComputerSystem.Reset":{"target":"/redfish/v1/Systems/1/Actions/ComputerSystem.Reset","ResetType@Redfish.AllowableValues":["On","ForceOff","PowerCycle"]}},"Links":{"ManagedBy":[{"@odata.id":"/redfish/v1/Managers/BMC"}]}}`,
	`{"PowerState":"PoweringOff","Boot":{"BootSourceOverrideEnabled":"Continuous","BootSourceOverrideTarget":"Usb"},"Actions":{"#ComputerSystem.Reset":{"target":"/x","@Redfish.ActionInfo":"/x/info"}},"VirtualMedia":{"@odata.id":"/v"}}`,
	`{"PowerState":"Paused","Boot":{}}`,
	`{"PowerState":"On","Boot":{"BootSourceOverrideTarget":"UefiHttp","BootSourceOverrideEnabled":"Once","HttpBootUri":"https://h/x.efi","BootSourceOverrideTarget@Redfish.AllowableValues":["None","UefiHttp"]}}`,
	`{"PowerState":"On","Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Continuous","HttpBootUri":null}}`,
	`{"PowerState":null,"Actions":{"#ComputerSystem.Reset":{"ResetType@Redfish.AllowableValues":[]}}}`,
	`{"PowerState":7}`,
	`[]`,
	``,
}

// FuzzParseSystem feeds ComputerSystem documents through everything the
// driver derives from them: power state, boot override, power plans.
func FuzzParseSystem(f *testing.F) {
	for _, s := range systemSeeds {
		f.Add([]byte(s), `W/"1"`)
	}
	f.Fuzz(func(t *testing.T, body []byte, etag string) {
		doc, err := parseSystem(body, etag)
		if err != nil {
			return
		}
		ps := powerState(doc.PowerState)
		switch ps {
		case bmc.PowerOn, bmc.PowerOff, bmc.PowerPoweringOn, bmc.PowerPoweringOff, bmc.PowerUnknown:
		default:
			t.Fatalf("powerState(%q) = %q, not a bmc constant", doc.PowerState, ps)
		}
		o := bootOverride(doc.Boot)
		if o.Device == bmc.BootDeviceNone && o.Persistent {
			t.Fatalf("override %+v: none cannot be persistent", o)
		}
		for _, a := range []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionOff, bmc.PowerActionSoftOff, bmc.PowerActionCycle, bmc.PowerActionReset} {
			plan, err := planPower(a, ps, doc.ResetAllowed, nil)
			if err != nil {
				if !errors.Is(err, bmc.ErrNotSupported) {
					t.Fatalf("planPower(%s, %s, %v): %v, want ErrNotSupported", a, ps, doc.ResetAllowed, err)
				}
				continue
			}
			if !plan.noop && !plan.wait && len(plan.candidates) == 0 && !plan.offThenOn {
				t.Fatalf("planPower(%s, %s, %v) = %+v: nothing to do", a, ps, doc.ResetAllowed, plan)
			}
			for _, c := range plan.candidates {
				if doc.ResetAllowed != nil && !contains(doc.ResetAllowed, c) {
					t.Fatalf("planPower chose %s, not advertised in %v", c, doc.ResetAllowed)
				}
			}
		}
		want := bmc.BootOverride{Device: bmc.BootDevicePXE, Mode: bmc.BootModeUEFI}
		for _, want := range []bmc.BootOverride{want, {Device: bmc.BootDeviceUEFIHTTP, URI: "http://h/x.efi"}} {
			b, err := bootPatch(want, doc)
			if err == nil {
				raw, _ := json.Marshal(struct{ Boot *schemas.Boot }{b})
				if strings.Contains(string(raw), "@Redfish") {
					t.Fatalf("PATCH body carries an annotation: %s", raw)
				}
				var sent struct{ Boot map[string]json.RawMessage }
				_ = json.Unmarshal(raw, &sent)
				for k := range sent.Boot {
					if !doc.BootHas[k] {
						t.Fatalf("PATCH body names Boot/%s, which the system's Boot lacks: %s", k, raw)
					}
				}
			} else if want.Device == bmc.BootDeviceUEFIHTTP && !errors.Is(err, bmc.ErrNotSupported) {
				t.Fatalf("bootPatch(%+v): %v, want ErrNotSupported", want, err)
			}
		}
		if o.URI != "" && o.Device != bmc.BootDeviceUEFIHTTP {
			t.Fatalf("override %+v: a URI without UEFI HTTP boot", o)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// FuzzClassify feeds error answers through gofish's error decoding and the
// driver's classification.
func FuzzClassify(f *testing.F) {
	f.Add(401, []byte(`{"error":{"code":"Base.1.8.NoValidSession","message":"x"}}`))
	f.Add(501, []byte(`{"error":{"code":"Base.1.8.ActionNotSupported","message":"PowerCycle","@Message.ExtendedInfo":[{"MessageId":"Base.1.8.ActionNotSupported","Message":"no"}]}}`))
	f.Add(503, []byte(`<html>busy</html>`))
	f.Add(400, []byte(`{"error":{"@Message.ExtendedInfo":[{}]}}`))
	f.Add(412, []byte(``))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 400 || status > 599 {
			return
		}
		err := classify(schemas.ConstructError(status, body))
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != status {
			t.Fatalf("classify(%d) = %v, want a StatusError with the status", status, err)
		}
		if len(se.Message) > 210 {
			t.Fatalf("message not shortened: %d bytes", len(se.Message))
		}
		unauthorized := status == http.StatusUnauthorized || status == http.StatusForbidden
		if errors.Is(err, bmc.ErrUnauthorized) != unauthorized {
			t.Fatalf("status %d: ErrUnauthorized = %t", status, !unauthorized)
		}
		transient := status == 408 || status == 429 || (status >= 500 && status != 501)
		if bmc.IsTransient(err) != transient {
			t.Fatalf("status %d: transient = %t, want %t", status, !transient, transient)
		}
	})
}

// FuzzParseServiceRoot feeds service roots to the link extraction.
func FuzzParseServiceRoot(f *testing.F) {
	f.Add([]byte(`{"Systems":{"@odata.id":"/redfish/v1/Systems"},"Links":{"Sessions":{"@odata.id":"/redfish/v1/SessionService/Sessions"}}}`))
	f.Add([]byte(`{"Systems":{"href":"/x"}}`))
	f.Add([]byte(`{"Links":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseServiceRoot(body)
		if err != nil {
			if json.Valid(body) && len(body) > 0 && body[0] == '{' && !strings.Contains(string(body), `"Systems"`) && !strings.Contains(string(body), `"Links"`) {
				t.Fatalf("an object without Systems or Links failed to parse: %v", err)
			}
			return
		}
		loc := string(r.Links.Sessions)
		if p := pathOf(loc); strings.Contains(loc, "://") && p != "" && !strings.HasPrefix(p, "/") {
			t.Fatalf("pathOf(%q) = %q, want a path", loc, p)
		}
	})
}

// FuzzVirtualMedia feeds VirtualMedia documents to the device matching and
// status read-back.
func FuzzVirtualMedia(f *testing.F) {
	f.Add([]byte(`{"Id":"CD","MediaTypes":["CD","DVD"],"Image":"http://x/a.iso","Inserted":true,"Actions":{"#VirtualMedia.InsertMedia":{"target":"/i"}}}`))
	f.Add([]byte(`{"Id":"USB1","Image":"","Inserted":null}`))
	f.Add([]byte(`{"Id":"RemovableDisk","Image":"nfs://h/x.img"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var vm schemas.VirtualMedia
		if err := json.Unmarshal(body, &vm); err != nil {
			return
		}
		st := mediaStatus(&vm)
		if vm.Inserted == nil && st.Inserted != (vm.Image != "") {
			t.Fatalf("status %+v for image %q without Inserted", st, vm.Image)
		}
		_ = mediaMatches(bmc.MediaCD, &vm)
		_ = mediaMatches(bmc.MediaUSB, &vm)
	})
}

// FuzzManagerDoc feeds Manager documents through the decoding ResetBMC
// uses: the reset target, inline allowed types, the ActionInfo link and
// ManagerForServers never panic, and an inline list is what is read.
func FuzzManagerDoc(f *testing.F) {
	f.Add([]byte(`{"ManagerType":"BMC","Links":{"ManagerForServers":[{"@odata.id":"/redfish/v1/Systems/1/"}]},"Actions":{"#Manager.Reset":{"target":"/x","ResetType@Redfish.AllowableValues":["ForceRestart"]}}}`))
	f.Add([]byte(`{"Actions":{"#Manager.Reset":{"target":"/x","@Redfish.ActionInfo":"/redfish/v1/Managers/Self/ResetActionInfo"}}}`))
	f.Add([]byte(`{"ManagerType":"AuxiliaryController","Links":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m managerDoc
		if err := json.Unmarshal(b, &m); err != nil {
			return
		}
		for _, s := range m.Links.ManagerForServers.ToStrings() {
			if !sameURI(s, s+"/") {
				t.Fatalf("sameURI(%q, %q) = false", s, s+"/")
			}
		}
		var raw struct {
			Actions struct {
				Reset struct {
					Allowed []string `json:"ResetType@Redfish.AllowableValues"`
				} `json:"#Manager.Reset"`
			}
		}
		_ = json.Unmarshal(b, &raw)
		if len(raw.Actions.Reset.Allowed) != len(m.Actions.Reset.Allowed) {
			t.Fatalf("allowed types %v, decoded %v", raw.Actions.Reset.Allowed, m.Actions.Reset.Allowed)
		}
	})
}
