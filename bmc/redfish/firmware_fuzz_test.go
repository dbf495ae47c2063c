package redfish

import (
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
	f.Fuzz(func(t *testing.T, b []byte) {
		us, err := decodeUpdateService("/redfish/v1/UpdateService", b)
		if err != nil {
			return
		}
		if us.inventory == "" {
			t.Fatal("no inventory URI")
		}
		for _, p := range []string{us.simple, us.push, us.actionInfo, us.inventory} {
			if strings.Contains(p, "://") {
				t.Fatalf("an absolute URI was kept: %q", p)
			}
		}
	})
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
