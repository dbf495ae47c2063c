package redfish

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// Real shapes: bmcweb's task (Payload with JsonBody as a string), DMTF's
// mockup monitor, an iDRAC-style Location of the task itself.
var taskSeeds = []string{
	`{"@odata.id":"/redfish/v1/TaskService/Tasks/2","@odata.type":"#Task.v1_7_4.Task","Id":"2","Messages":[{"MessageArgs":["GB200Nvl-24.08-2","FW_BMC_0"],"MessageId":"Update.1.0.TransferringToComponent","Message":"x","Severity":"OK"}],"Payload":{"HttpHeaders":["Content-Length: 102712798"],"HttpOperation":"POST","JsonBody":"null","TargetUri":"/redfish/v1/UpdateService"},"PercentComplete":0,"TaskMonitor":"/redfish/v1/TaskService/Tasks/2/Monitor","TaskState":"Running","TaskStatus":"OK"}`,
	`{"@odata.id":"/redfish/v1/TaskService/Tasks/5","Id":"5","TaskState":"Completed","TaskStatus":"OK","Payload":{"JsonBody":"{\"ImageURI\":\"https://h/fw.bin?sig=s3cr3t-Zq7\"}"},"Messages":[{"MessageId":"Update.1.0.AwaitToActivate","MessageArgs":["BIOS"]},{"MessageId":"Base.1.16.ResetRequired","MessageArgs":["/redfish/v1/Systems/1","ForceRestart"],"Message":"reset https://h/fw.bin?sig=s3cr3t-Zq7 now"}]}`,
	`{"Id":"JID_1","TaskState":"Exception","TaskStatus":"Critical","PercentComplete":12.5,"Payload":{"JsonBody":{"ImageURI":"http://x/y"}},"Messages":[{"MessageArgs":[1,true,null]}]}`,
	`{"TaskState":"Killed","PercentComplete":-4}`, `null`, `[]`, `{"Payload":{"JsonBody":7}}`,
}

func FuzzDecodeTask(f *testing.F) {
	for _, s := range taskSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		td, err := decodeTask("/redfish/v1/TaskService/Tasks/1", b)
		if err != nil {
			if bmc.IsTransient(err) {
				t.Fatalf("a bad task decodes to a transient error: %v", err)
			}
			return
		}
		st := td.status()
		switch st.State {
		case bmc.FirmwareTaskRunning, bmc.FirmwareTaskCompleted, bmc.FirmwareTaskFailed:
		default:
			t.Fatalf("state %q", st.State)
		}
		if st.Percent < -1 || st.Percent > 100 || len(st.Messages) > bmc.MaxFirmwareMessages {
			t.Fatalf("status out of bounds: %+v", st)
		}
		for _, m := range st.Messages {
			if strings.Contains(m, "s3cr3t-Zq7") {
				t.Fatalf("a message shows a URL's query: %s", m)
			}
		}
		_ = td.imageURI()
		_ = td.args()
	})
}

func TestDecodeTaskShapes(t *testing.T) {
	td, err := decodeTask("t", []byte(taskSeeds[1]))
	if err != nil {
		t.Fatal(err)
	}
	st := td.status()
	if st.State != bmc.FirmwareTaskCompleted || !st.NeedsReset || st.Reset != bmc.FirmwareResetSystem {
		t.Fatalf("%+v", st)
	}
	if got := td.imageURI(); got != "https://h/fw.bin?sig=s3cr3t-Zq7" {
		t.Fatalf("imageURI from a string JsonBody: %q", got)
	}
	td, _ = decodeTask("t", []byte(taskSeeds[2]))
	if st := td.status(); st.State != bmc.FirmwareTaskFailed || st.Percent != 12 {
		t.Fatalf("%+v", st)
	}
	if got := td.imageURI(); got != "http://x/y" {
		t.Fatalf("imageURI from an object JsonBody: %q", got)
	}
	td, _ = decodeTask("t", []byte(taskSeeds[0]))
	if td.imageURI() != "" || td.Payload.TargetURI != "/redfish/v1/UpdateService" {
		t.Fatalf("bmcweb push task: %+v", td.Payload)
	}
}

func FuzzDecodeUpdateService(f *testing.F) {
	f.Add([]byte(`{"Actions":{"#UpdateService.SimpleUpdate":{"target":"/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate","TransferProtocol@Redfish.AllowableValues":["HTTP","HTTPS"]}},"FirmwareInventory":{"@odata.id":"/redfish/v1/UpdateService/FirmwareInventory"},"MultipartHttpPushUri":"/redfish/v1/UpdateService/update-multipart"}`))
	f.Add([]byte(`{"Actions":{"#UpdateService.SimpleUpdate":{"target":"https://bmc/x","@Redfish.ActionInfo":"/redfish/v1/UpdateService/SimpleUpdateActionInfo"}}}`))
	f.Add([]byte(`{"HttpPushUri":"/redfish/v1/UpdateService/update"}`))
	f.Add([]byte(`{"Actions":{"#UpdateService.SimpleUpdate":null}}`))
	// Intel: SoftwareInventory only. HPE iLO 5: Oem.Hpe with the state.
	f.Add([]byte(`{"@odata.id":"/redfish/v1/UpdateService","SoftwareInventory":{"@odata.id":"/redfish/v1/UpdateService/SoftwareInventory"},"Actions":{"#UpdateService.SimpleUpdate":{"target":"/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}}`))
	f.Add([]byte(`{"@odata.id":"/redfish/v1/updateservice/","FirmwareInventory":{"@odata.id":"/redfish/v1/updateservice/firmwareinventory/"},"Oem":{"Hpe":{"State":"Writing","FlashProgressPercent":42}}}`))
	f.Add([]byte(`{"FirmwareInventory":{"@odata.id":"https://bmc/fw"},"SoftwareInventory":{"@odata.id":"/sw"},"Oem":{"Hpe":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		us, err := decodeUpdateService("/redfish/v1/UpdateService", b)
		if err != nil {
			return
		}
		var doc struct {
			FirmwareInventory, SoftwareInventory struct {
				ID string `json:"@odata.id"`
			}
		}
		_ = json.Unmarshal(b, &doc)
		// The inventory is the one the document names, never guessed.
		switch want := pathOf(doc.FirmwareInventory.ID); {
		case want != "" && (us.inventory != want || us.invName != "FirmwareInventory"):
			t.Fatalf("inventory %q (%s), the document names FirmwareInventory %q", us.inventory, us.invName, want)
		case want == "" && us.inventory != pathOf(doc.SoftwareInventory.ID):
			t.Fatalf("inventory %q, the document names SoftwareInventory %q and no FirmwareInventory", us.inventory, doc.SoftwareInventory.ID)
		}
		for _, p := range []string{us.simple, us.push, us.actionInfo, us.inventory} {
			if strings.Contains(p, "://") {
				t.Fatalf("an absolute URI was kept: %q", p)
			}
		}
		st := hpeUpdateStatus(b)
		if st.Percent < -1 || st.Percent > 100 || len(st.Messages) > bmc.MaxFirmwareMessages {
			t.Fatalf("update state out of bounds: %+v", st)
		}
		for _, m := range st.Messages {
			if len(m) > 300 {
				t.Fatalf("unbounded message: %d bytes", len(m))
			}
		}
	})
}

// Real shapes of firmware inventory members: Intel's SoftwareInventory, an
// HPE Cray EX4252 node BIOS and BMC (RelatedItem), an iLO 5 member, and
// broken or odd RelatedItems.
var firmwareMemberSeeds = []string{
	`{"@odata.id":"/redfish/v1/UpdateService/SoftwareInventory/bios_active","@odata.type":"#SoftwareInventory.v1_1_0.SoftwareInventory","Id":"bios_active","Name":"BIOS","Version":"SE5C620.86B.02.01.0012","Updateable":true}`,
	`{"@odata.id":"/redfish/v1/UpdateService/FirmwareInventory/Node1.BIOS","Id":"Node1.BIOS","Name":"Node1.BIOS","Version":"ex425.bios-1.4.2","RelatedItem":[{"@odata.id":"/redfish/v1/Systems/Node1"}],"RelatedItem@odata.count":1}`,
	`{"@odata.id":"/redfish/v1/UpdateService/FirmwareInventory/BMC","Id":"BMC","Version":"nc.1.9.3","RelatedItem":[{"@odata.id":"/redfish/v1/Managers/BMC"},{"@odata.id":"/redfish/v1/Chassis/Enclosure"}]}`,
	`{"@odata.id":"/redfish/v1/UpdateService/FirmwareInventory/Node0.CPU","Id":"Node0.CPU","RelatedItem":[{"@odata.id":"https://10.0.0.1/redfish/v1/Systems/Node0/Processors/CPU0"},{"@odata.id":"/redfish/v1/systems/node0"}]}`,
	`{"@odata.id":"/redfish/v1/UpdateService/FirmwareInventory/1/","Id":"1","Name":"iLO 5","Version":"2.44 Jan 28 2021","Updateable":true}`,
	`{"Id":"x","RelatedItem":{"@odata.id":"/redfish/v1/Systems/1"}}`, `{"RelatedItem":[null,7,{"@odata.id":7}]}`,
	`{"RelatedItem":[{"@odata.id":"/redfish/v1/Systems"},{"@odata.id":"/redfish/v1/Systems/"}]}`, `null`, `[]`,
}

func FuzzDecodeFirmwareMember(f *testing.F) {
	for _, s := range firmwareMemberSeeds {
		f.Add([]byte(s), "/redfish/v1/UpdateService/FirmwareInventory/listed")
	}
	f.Fuzz(func(t *testing.T, b []byte, listed string) {
		m, err := decodeFirmwareMember(b, listed)
		inline, ierr := decodeFirmwareMember(b, "")
		c, cerr := decodeSoftwareInventory(b)
		if (err == nil) != (cerr == nil) || (ierr == nil) != (cerr == nil) || (cerr == nil && c != inline.FirmwareComponent) {
			t.Fatalf("decodeSoftwareInventory %+v %v, decodeFirmwareMember %+v %v", c, cerr, inline.FirmwareComponent, ierr)
		}
		if err != nil {
			if bmc.IsTransient(err) {
				t.Fatalf("a bad member decodes to a transient error: %v", err)
			}
			return
		}
		if strings.Contains(m.uri, "://") {
			t.Fatalf("an absolute URI was kept: %q", m.uri)
		}
		for i, s := range m.systems {
			if s == "" || strings.Contains(s, "://") || strings.ContainsAny(s, "?#") || systemOf(s) != s {
				t.Fatalf("system %q is not a system path", s)
			}
			for _, o := range m.systems[:i] {
				if sameSystem(o, s) {
					t.Fatalf("system %q named twice: %v", s, m.systems)
				}
			}
		}
	})
}

func TestDecodeFirmwareMemberShapes(t *testing.T) {
	for _, c := range []struct {
		seed    int
		id      string
		systems []string
	}{
		{0, "bios_active", nil},
		{1, "Node1.BIOS", []string{"/redfish/v1/Systems/Node1"}},
		{2, "BMC", nil},
		{3, "Node0.CPU", []string{"/redfish/v1/Systems/Node0"}},
		{4, "1", nil},
		{5, "x", nil}, // a RelatedItem that is not a list: none
		{7, "listed", nil},
	} {
		m, err := decodeFirmwareMember([]byte(firmwareMemberSeeds[c.seed]), "/redfish/v1/UpdateService/FirmwareInventory/listed")
		if err != nil || m.ID != c.id || !slices.Equal(m.systems, c.systems) {
			t.Errorf("seed %d: %+v %v; want Id %q, systems %v", c.seed, m, err, c.id, c.systems)
		}
	}
	if m, _ := decodeFirmwareMember([]byte(firmwareMemberSeeds[4]), ""); m.uri != "/redfish/v1/UpdateService/FirmwareInventory/1/" {
		t.Errorf("iLO member URI %q", m.uri)
	}
	for _, c := range []struct {
		doc   string
		state bmc.FirmwareTaskState
		pct   int
	}{
		{`{"Oem":{"Hpe":{"State":"Writing","FlashProgressPercent":42}}}`, bmc.FirmwareTaskRunning, 42},
		{`{"Oem":{"Hpe":{"State":"Complete","FlashProgressPercent":null}}}`, bmc.FirmwareTaskCompleted, 100},
		{`{"Oem":{"Hpe":{"State":"Error"}}}`, bmc.FirmwareTaskFailed, -1},
		{`{"Oem":{"Hpe":{"State":"Idle","FlashProgressPercent":0}}}`, bmc.FirmwareTaskGone, -1},
		{`{"Id":"UpdateService"}`, bmc.FirmwareTaskGone, -1},
		{`{"Oem":{"Hpe":{"State":7}}}`, bmc.FirmwareTaskGone, -1},
	} {
		if st := hpeUpdateStatus([]byte(c.doc)); st.State != c.state || st.Percent != c.pct || len(st.Messages) != 1 {
			t.Errorf("%s: %+v; want %s at %d%%, one message", c.doc, st, c.state, c.pct)
		}
	}
}

func FuzzTaskRefFrom(f *testing.F) {
	f.Add("/redfish/v1/TaskService/Tasks/2/Monitor", []byte(taskSeeds[0]))
	f.Add("/redfish/v1/TaskService/TaskMonitors/5", []byte(`{"@odata.id":"/redfish/v1/TaskService/Tasks/5","@odata.type":"#Task.v1_7_4.Task","Id":"5"}`))
	f.Add("https://idrac/redfish/v1/TaskService/Tasks/JID_12", []byte{})
	f.Add("", []byte(`{"error":{}}`))
	f.Fuzz(func(t *testing.T, loc string, b []byte) {
		ref := taskRefFrom(loc, b)
		if ref.TaskURI != "" && strings.Contains(ref.TaskURI, "://") {
			t.Fatalf("absolute task URI kept: %+v", ref)
		}
	})
}

func TestTaskRefShapes(t *testing.T) {
	for _, c := range []struct {
		loc  string
		body string
		want bmc.FirmwareTaskRef
	}{
		{"/redfish/v1/TaskService/Tasks/2/Monitor", taskSeeds[0], bmc.FirmwareTaskRef{TaskURI: "/redfish/v1/TaskService/Tasks/2", MonitorURI: "/redfish/v1/TaskService/Tasks/2/Monitor", TaskID: "2"}},
		{"/redfish/v1/TaskService/Tasks/7/Monitor", "", bmc.FirmwareTaskRef{TaskURI: "/redfish/v1/TaskService/Tasks/7", MonitorURI: "/redfish/v1/TaskService/Tasks/7/Monitor", TaskID: "7"}},
		{"https://idrac:443/redfish/v1/TaskService/Tasks/JID_12", "", bmc.FirmwareTaskRef{TaskURI: "/redfish/v1/TaskService/Tasks/JID_12", TaskID: "JID_12"}},
		{"/redfish/v1/TaskService/TaskMonitors/5", "", bmc.FirmwareTaskRef{MonitorURI: "/redfish/v1/TaskService/TaskMonitors/5"}},
		{"", "", bmc.FirmwareTaskRef{}},
	} {
		if got := taskRefFrom(c.loc, []byte(c.body)); got != c.want {
			t.Errorf("taskRefFrom(%q): %+v, want %+v", c.loc, got, c.want)
		}
	}
}

func FuzzRedactURLs(f *testing.F) {
	f.Add("fetching https://h/fw.bin?sig=s3cr3t-Zq7 failed")
	f.Add("http://u:p@h/x 'https://h/y?token=s3cr3t-Zq7'")
	f.Fuzz(func(t *testing.T, s string) {
		out := redactURLs(s)
		// Every URL left in the text ends before its query.
		for rest := out; ; {
			i := strings.Index(rest, "http://")
			if j := strings.Index(rest, "https://"); j >= 0 && (i < 0 || j < i) {
				i = j
			}
			if i < 0 {
				return
			}
			tok := rest[i:]
			if end := strings.IndexAny(tok, " \t\n'\"<>"); end >= 0 {
				tok = tok[:end]
			}
			if strings.ContainsAny(tok, "?#") {
				t.Fatalf("redactURLs(%q) = %q keeps the query of %q", s, out, tok)
			}
			rest = rest[i+len("http://"):]
		}
	})
}
