package redfishtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Firmware update: UpdateService (SimpleUpdate, MultipartHttpPushUri,
// FirmwareInventory) and TaskService. See docs/firmware.md.

const (
	updateServiceURI = root + "/UpdateService"
	simpleUpdateURI  = updateServiceURI + "/Actions/UpdateService.SimpleUpdate"
	firmwarePushURI  = updateServiceURI + "/update-multipart"
	inventoryURI     = updateServiceURI + "/FirmwareInventory"
	softwareInvURI   = updateServiceURI + "/SoftwareInventory"
	taskServiceURI   = root + "/TaskService"
	tasksURI         = taskServiceURI + "/Tasks"
	taskMonitorsURI  = taskServiceURI + "/TaskMonitors"

	// maxFirmwareImage bounds what the simulator fetches or accepts.
	maxFirmwareImage = 64 << 20
	imageMagic       = "REDFISHTEST-FIRMWARE"
)

// FirmwarePush selects how the simulated BMC takes a firmware image.
type FirmwarePush int

// Firmware push modes.
const (
	// FirmwareSimpleUpdate offers UpdateService.SimpleUpdate only: the
	// BMC fetches the image from its ImageURI.
	FirmwareSimpleUpdate FirmwarePush = iota
	// FirmwareMultipartPush offers only MultipartHttpPushUri: the client
	// uploads the image.
	FirmwareMultipartPush
	// FirmwareSimpleUpdateAndPush offers both.
	FirmwareSimpleUpdateAndPush
	// FirmwareNone offers no UpdateService and no TaskService (404).
	FirmwareNone
)

// FirmwareConfig is the firmware update personality (Config.Firmware).
// The zero value offers SimpleUpdate, components BMC and BIOS at 1.0.0,
// and update tasks that complete at once.
type FirmwareConfig struct {
	// Push selects SimpleUpdate and/or multipart push. Defaults to
	// FirmwareSimpleUpdate.
	Push FirmwarePush
	// Components are the firmware inventory members and their initial
	// versions, ID to version. Defaults to BMC and BIOS at 1.0.0.
	Components map[string]string
	// Duration is how long an update task runs (Config.Clock); its
	// PercentComplete grows with it. Defaults to 0: a task has completed
	// by the time it is first read.
	Duration time.Duration
	// Fail ends every update task in TaskState Exception, TaskStatus
	// Critical, with an Update.1.0.ApplyFailed message; versions stay.
	// Defaults to false.
	Fail bool
	// ActivateOnReset completes update tasks with the messages
	// Update.1.0.AwaitToActivate and Base.1.16.ResetRequired (naming the
	// system, or the manager for component BMC); the version changes only
	// when the system next boots (a restart, a cycle, on from off) or, for
	// BMC, at the next Manager.Reset. Defaults to false: the version
	// changes when the task completes.
	ActivateOnReset bool
	// RequireTransferProtocol advertises
	// TransferProtocol@Redfish.AllowableValues (HTTP, HTTPS) on
	// SimpleUpdate and answers a request without TransferProtocol 400
	// ActionParameterMissing. Defaults to false: not advertised, and
	// inferred from the ImageURI.
	RequireTransferProtocol bool

	// SoftwareInventory serves the firmware inventory as
	// UpdateService.SoftwareInventory (/redfish/v1/UpdateService/
	// SoftwareInventory), and the UpdateService names no
	// FirmwareInventory (404 there), as Intel BMCs do. Defaults to false:
	// FirmwareInventory.
	SoftwareInventory bool
	// NoTaskService leaves the TaskService out: the service root links
	// none and /redfish/v1/TaskService answers 404 (Intel BMCs,
	// sushy-tools). Updates are then UntrackedUpdates. Defaults to false.
	NoTaskService bool
	// UntrackedUpdates answers an accepted update with no task: no
	// Location, no Task body (204 No Content; 200 with iLO's
	// Base.1.4.Success ExtendedInfo body under OemHpe). The update runs all
	// the same (Duration, Fail) and is listed by no TaskService; it shows
	// in the component's version at the end and, under OemHpe, in
	// UpdateService.Oem.Hpe.State. Defaults to false: a task, 202.
	UntrackedUpdates bool
	// OemHpe gives the UpdateService iLO 5's Oem.Hpe with State (Idle
	// before any update; Updating, with FlashProgressPercent, while the
	// latest update runs; Complete or Error once it ended) and the service
	// root Vendor "HPE" and an Oem.Hpe object. With UntrackedUpdates it is
	// an HPE iLO 5's firmware update ([VendorILO5Apollo]). Defaults to
	// false.
	OemHpe bool
	// RelatedItems are firmware inventory members' RelatedItem links,
	// component ID to @odata.ids (e.g. "Node1.BIOS" to
	// /redfish/v1/Systems/2): a multi-node BMC's inventory lists every
	// node's firmware, each tied to its system, and the enclosure's to a
	// chassis or manager. A member not listed has no RelatedItem.
	// Defaults to none.
	RelatedItems map[string][]string
}

// crayEX4252Firmware is VendorCrayEX4252's firmware inventory: the
// blade's, every node's BIOS included, tied by RelatedItem.
func crayEX4252Firmware() FirmwareConfig {
	fc := FirmwareConfig{
		Components:   map[string]string{"BMC": "nc.1.9.3", "FPGA0": "fpga.2.1.0", "Recovery": "nc.1.8.0"},
		RelatedItems: map[string][]string{"BMC": {managerURI}, "FPGA0": {chassisURI}},
	}
	for i := range 4 {
		id := fmt.Sprintf("Node%d.BIOS", i)
		fc.Components[id] = "ex4252.bios-1.4.2"
		fc.RelatedItems[id] = []string{fmt.Sprintf("%s/Systems/%d", root, i+1)}
	}
	return fc
}

// FirmwareImage returns the bytes of a firmware image the simulator
// accepts: it installs version on component. Serve it over HTTP for
// SimpleUpdate (the simulator fetches ImageURI), or let a client push it.
// Any other content fails the update task with Update.1.0.TransferFailed.
func FirmwareImage(component, version string) []byte {
	return fmt.Appendf(nil, "%s component=%s version=%s\n%s", imageMagic, component, version, bytes.Repeat([]byte{0x5a}, 512))
}

// parseImage reads what FirmwareImage wrote.
func parseImage(b []byte) (component, version string, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) != 3 || f[0] != imageMagic || !strings.HasPrefix(f[1], "component=") || !strings.HasPrefix(f[2], "version=") {
		return "", "", fmt.Errorf("not a firmware image")
	}
	return strings.TrimPrefix(f[1], "component="), strings.TrimPrefix(f[2], "version="), nil
}

// FirmwareTask is a snapshot of one update task.
type FirmwareTask struct {
	ID string
	// URI is the task's @odata.id; Monitor its task monitor.
	URI, Monitor string
	// TaskState and TaskStatus as the task reports them.
	TaskState, TaskStatus string
	Percent               int
	// ImageURI is what SimpleUpdate was asked for ("" for a push).
	ImageURI string
	// Pushed says the image came through MultipartHttpPushUri.
	Pushed bool
	// Component and Version are what the image installs ("" when it was
	// not a valid image).
	Component, Version string
	// Untracked says the BMC answered the update with no task and lists
	// none (FirmwareConfig.UntrackedUpdates): URI and Monitor are "".
	Untracked bool
}

type fwMessage struct {
	id, text string
	args     []string
}

type fwTask struct {
	id                 string
	start              time.Time
	imageURI           string
	pushed             bool
	jsonBody           string
	component, version string
	transferErr        string
	done               bool
	state, status      string
	messages           []fwMessage
	untracked          bool // answered with no task, listed by no TaskService
}

type firmwareState struct {
	versions map[string]string
	pending  map[string]string // installed, activates at the next reset
	tasks    []*fwTask
	nextTask int
}

func (s *Server) initFirmware() {
	comps := s.cfg.Firmware.Components
	if comps == nil {
		comps = map[string]string{"BMC": "1.0.0", "BIOS": "1.0.0"}
	}
	s.fw.versions = maps.Clone(comps)
	s.fw.pending = map[string]string{}
}

func (s *Server) firmwareOffered() bool { return s.cfg.Firmware.Push != FirmwareNone }

// tasksOffered reports a TaskService.
func (s *Server) tasksOffered() bool { return s.firmwareOffered() && !s.cfg.Firmware.NoTaskService }

// untracked reports updates answered with no task.
func (s *Server) untracked() bool {
	return s.cfg.Firmware.UntrackedUpdates || s.cfg.Firmware.NoTaskService
}

// fwInventoryURI is the firmware inventory collection.
func (s *Server) fwInventoryURI() string {
	if s.cfg.Firmware.SoftwareInventory {
		return softwareInvURI
	}
	return inventoryURI
}

func (s *Server) firmwareRoutes(handle func(method, path string, h http.HandlerFunc)) {
	handle("GET", updateServiceURI, s.auth(s.getUpdateService))
	handle("POST", simpleUpdateURI, s.auth(s.simpleUpdate))
	handle("POST", firmwarePushURI, s.auth(s.pushUpdate))
	handle("GET", s.fwInventoryURI(), s.auth(s.listInventory))
	handle("GET", s.fwInventoryURI()+"/{id}", s.auth(s.getInventory))
	handle("GET", taskServiceURI, s.auth(s.getTaskService))
	handle("GET", tasksURI, s.auth(s.listTasks))
	handle("GET", tasksURI+"/{id}", s.auth(s.getTask))
	handle("GET", taskMonitorsURI+"/{id}", s.auth(s.getTaskMonitor))
}

// firmwareLinks adds the service root's links (and, under OemHpe, iLO's
// Vendor and Oem.Hpe).
func (s *Server) firmwareLinks(doc map[string]any) {
	if s.firmwareOffered() {
		doc["UpdateService"] = link(updateServiceURI)
	}
	if s.tasksOffered() {
		doc["Tasks"] = link(taskServiceURI)
	}
	if s.cfg.Firmware.OemHpe {
		doc["Vendor"] = "HPE"
		doc["Oem"] = map[string]any{"Hpe": map[string]any{
			"@odata.type": "#HpeiLOServiceExt.v2_3_0.HpeiLOServiceExt",
			"Manager":     []any{map[string]any{"ManagerType": "iLO 5", "ManagerFirmwareVersion": "2.44"}},
		}}
	}
}

// noTasks answers 404 where the BMC has no TaskService.
func (s *Server) noTasks(w http.ResponseWriter) bool {
	if !s.tasksOffered() {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no TaskService")
		return true
	}
	return false
}

func (s *Server) noFirmware(w http.ResponseWriter) bool {
	if !s.firmwareOffered() {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no UpdateService")
		return true
	}
	return false
}

func (s *Server) getUpdateService(w http.ResponseWriter, _ *http.Request) {
	if s.noFirmware(w) {
		return
	}
	doc := map[string]any{
		"@odata.id": updateServiceURI, "@odata.type": "#UpdateService.v1_11_0.UpdateService",
		"Id": "UpdateService", "Name": "Update Service", "ServiceEnabled": true,
	}
	if s.cfg.Firmware.SoftwareInventory {
		doc["SoftwareInventory"] = link(softwareInvURI)
	} else {
		doc["FirmwareInventory"] = link(inventoryURI)
	}
	if s.cfg.Firmware.OemHpe {
		s.mu.Lock()
		s.settleFirmware()
		state, pct := "Idle", 0
		if n := len(s.fw.tasks); n > 0 {
			t := s.fw.tasks[n-1]
			switch {
			case !t.done:
				state, pct = "Updating", s.percent(t)
			case t.state == "Completed":
				state, pct = "Complete", 100
			default:
				state = "Error"
			}
		}
		s.mu.Unlock()
		doc["Oem"] = map[string]any{"Hpe": map[string]any{
			"@odata.type": "#HpeiLOUpdateServiceExt.v2_1_2.HpeiLOUpdateServiceExt",
			"State":       state, "FlashProgressPercent": pct,
		}}
	}
	p := s.cfg.Firmware.Push
	if p == FirmwareSimpleUpdate || p == FirmwareSimpleUpdateAndPush {
		action := map[string]any{"target": simpleUpdateURI}
		if s.cfg.Firmware.RequireTransferProtocol {
			action["TransferProtocol@Redfish.AllowableValues"] = []string{"HTTP", "HTTPS"}
		}
		doc["Actions"] = map[string]any{"#UpdateService.SimpleUpdate": action}
	}
	if p == FirmwareMultipartPush || p == FirmwareSimpleUpdateAndPush {
		doc["MultipartHttpPushUri"] = firmwarePushURI
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// checkTargets answers 400 unless every target is an inventory member.
// Called with s.mu held.
func (s *Server) checkTargets(w http.ResponseWriter, targets []string) bool {
	for _, t := range targets {
		id := strings.TrimPrefix(strings.TrimRight(t, "/"), s.fwInventoryURI()+"/")
		if _, ok := s.fw.versions[id]; !ok || id == t {
			redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "Targets: "+t+" is not a firmware inventory member")
			return false
		}
	}
	return true
}

func (s *Server) simpleUpdate(w http.ResponseWriter, r *http.Request) {
	p := s.cfg.Firmware.Push
	if s.noFirmware(w) {
		return
	}
	if p != FirmwareSimpleUpdate && p != FirmwareSimpleUpdateAndPush {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no SimpleUpdate action")
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		ImageURI         string
		TransferProtocol string
		Targets          []string
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "body is not JSON")
		return
	}
	if body.ImageURI == "" {
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "SimpleUpdate needs an ImageURI")
		return
	}
	scheme, _, _ := strings.Cut(body.ImageURI, "://")
	switch tp := body.TransferProtocol; {
	case tp == "" && s.cfg.Firmware.RequireTransferProtocol:
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "SimpleUpdate needs a TransferProtocol")
		return
	case tp != "" && tp != "HTTP" && tp != "HTTPS":
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "TransferProtocol "+tp+" is not supported")
		return
	case tp != "" && !strings.EqualFold(tp, scheme):
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueConflict", "TransferProtocol "+tp+" does not match the ImageURI's scheme")
		return
	case !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https"):
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueFormatError", "ImageURI must be an http or https URL")
		return
	}
	s.mu.Lock()
	ok := s.checkTargets(w, body.Targets)
	s.mu.Unlock()
	if !ok {
		return
	}
	// A BMC fetches the image itself; this one does it before answering.
	img, ferr := fetchImage(r.Context(), body.ImageURI)
	t := &fwTask{imageURI: body.ImageURI, jsonBody: string(raw)}
	s.newUpdateTask(w, r, t, img, ferr, body.Targets)
}

func fetchImage(ctx context.Context, uri string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the image server answered %d", resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxFirmwareImage))
}

func (s *Server) pushUpdate(w http.ResponseWriter, r *http.Request) {
	p := s.cfg.Firmware.Push
	if s.noFirmware(w) {
		return
	}
	if p != FirmwareMultipartPush && p != FirmwareSimpleUpdateAndPush {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no MultipartHttpPushUri")
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		redfishError(w, http.StatusUnsupportedMediaType, "Base.1.8.UnsupportedMediaType", "want multipart/form-data")
		return
	}
	var params struct{ Targets []string }
	var img []byte
	gotFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "broken multipart body")
			return
		}
		switch part.FormName() {
		case "UpdateParameters":
			if err := json.NewDecoder(io.LimitReader(part, 1<<20)).Decode(&params); err != nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "UpdateParameters is not JSON")
				return
			}
		case "UpdateFile":
			gotFile = true
			img, err = io.ReadAll(io.LimitReader(part, maxFirmwareImage))
			if err != nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "broken upload")
				return
			}
		}
	}
	if !gotFile {
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "no UpdateFile part")
		return
	}
	s.mu.Lock()
	ok := s.checkTargets(w, params.Targets)
	s.mu.Unlock()
	if !ok {
		return
	}
	s.newUpdateTask(w, r, &fwTask{pushed: true, jsonBody: "null"}, img, nil, params.Targets)
}

// newUpdateTask creates the task for an accepted update and answers 202
// with the task, its monitor in Location; an untracked update is answered
// without a task.
func (s *Server) newUpdateTask(w http.ResponseWriter, r *http.Request, t *fwTask, img []byte, fetchErr error, targets []string) {
	if fetchErr == nil {
		var err error
		if t.component, t.version, err = parseImage(img); err != nil {
			fetchErr = err
		}
	}
	if fetchErr != nil {
		t.transferErr = fetchErr.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fetchErr == nil {
		if _, ok := s.fw.versions[t.component]; !ok {
			t.transferErr = "the image is for component " + t.component + ", which this BMC does not have"
		}
		for _, tg := range targets {
			if path.Base(tg) != t.component {
				t.transferErr = "the image is for component " + t.component + ", not for target " + tg
			}
		}
	}
	t.untracked = s.untracked()
	s.fw.nextTask++
	t.id = strconv.Itoa(s.fw.nextTask)
	t.start = s.now()
	t.state, t.status = "Running", "OK"
	name := "image"
	if t.imageURI != "" {
		name = path.Base(strings.SplitN(t.imageURI, "?", 2)[0])
	}
	t.messages = []fwMessage{{id: "TaskEvent.1.0.TaskStarted", text: "The task with Id '" + t.id + "' has started.", args: []string{t.id}}}
	if t.transferErr == "" {
		t.messages = append(t.messages, fwMessage{id: "Update.1.0.TransferringToComponent",
			text: "Image '" + name + "' is being transferred to '" + t.component + "'.", args: []string{name, t.component}})
	}
	s.fw.tasks = append(s.fw.tasks, t)
	target := simpleUpdateURI
	if t.pushed {
		target = firmwarePushURI
	}
	s.stateChanged(r, "", "firmware:"+target+" task "+t.id)
	s.settleFirmware()
	switch {
	case t.untracked && s.cfg.Firmware.OemHpe:
		// iLO 5: 200 with a success message wrapped in "error".
		writeJSON(w, http.StatusOK, "", map[string]any{"error": map[string]any{
			"code": "iLO.0.10.ExtendedInfo", "message": "See @Message.ExtendedInfo for more information.",
			"@Message.ExtendedInfo": []any{map[string]any{"MessageId": "Base.1.4.Success"}},
		}})
	case t.untracked:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Location", taskMonitorsURI+"/"+t.id)
		writeJSON(w, http.StatusAccepted, "", s.taskDoc(t))
	}
}

// settleFirmware lands the power changes that are due (a boot activates
// staged host firmware) and finishes the tasks whose time came. Called with
// s.mu held.
func (s *Server) settleFirmware() {
	s.settleAll() // a boot that activates staged firmware counts before this read
	s.settleTasks()
}

// settleTasks ends the update tasks whose Duration passed. Called with s.mu
// held.
func (s *Server) settleTasks() {
	now := s.now()
	for _, t := range s.fw.tasks {
		if t.done || now.Before(t.start.Add(s.cfg.Firmware.Duration)) {
			continue
		}
		t.done = true
		switch {
		case t.transferErr != "":
			t.state, t.status = "Exception", "Critical"
			t.messages = append(t.messages, fwMessage{id: "Update.1.0.TransferFailed", text: "Transfer of the image failed: " + t.transferErr, args: []string{t.component}})
		case s.cfg.Firmware.Fail:
			t.state, t.status = "Exception", "Critical"
			t.messages = append(t.messages, fwMessage{id: "Update.1.0.ApplyFailed", text: "Installing the image on '" + t.component + "' failed.", args: []string{t.component}})
		case s.cfg.Firmware.ActivateOnReset:
			t.state, t.status = "Completed", "OK"
			s.fw.pending[t.component] = t.version
			resetURI, rt := root+"/Systems/1", "ForceRestart"
			if t.component == "BMC" {
				resetURI, rt = managerURI, "GracefulRestart"
			}
			t.messages = append(t.messages,
				fwMessage{id: "Update.1.0.AwaitToActivate", text: "Awaiting an action to activate the image on '" + t.component + "'.", args: []string{t.component}},
				fwMessage{id: "Base.1.16.ResetRequired", text: "A reset of " + resetURI + " is required.", args: []string{resetURI, rt}})
		default:
			t.state, t.status = "Completed", "OK"
			s.fw.versions[t.component] = t.version
			t.messages = append(t.messages, fwMessage{id: "Update.1.0.UpdateSuccessful", text: "The update of '" + t.component + "' succeeded.", args: []string{t.component, t.version}})
		}
		t.messages = append(t.messages, fwMessage{id: "TaskEvent.1.0.TaskCompletedOK", text: "The task with Id '" + t.id + "' has completed.", args: []string{t.id}})
	}
}

// activateFirmware applies pending versions after a reset: bmc is a
// Manager.Reset (component BMC), otherwise a system boot (the others).
// Called with s.mu held.
func (s *Server) activateFirmware(bmc bool) {
	s.settleFirmware()
	for c, v := range s.fw.pending {
		if (c == "BMC") == bmc {
			s.fw.versions[c] = v
			delete(s.fw.pending, c)
		}
	}
}

func (s *Server) percent(t *fwTask) int {
	if t.done {
		return 100
	}
	d := s.cfg.Firmware.Duration
	if d <= 0 {
		return 0
	}
	return min(99, int(s.now().Sub(t.start)*100/d))
}

func (s *Server) taskDoc(t *fwTask) map[string]any {
	msgs := []any{}
	for _, m := range t.messages {
		msgs = append(msgs, map[string]any{"MessageId": m.id, "Message": m.text, "MessageArgs": m.args, "Severity": "OK"})
	}
	target := simpleUpdateURI
	if t.pushed {
		target = firmwarePushURI
	}
	doc := map[string]any{
		"@odata.id": tasksURI + "/" + t.id, "@odata.type": "#Task.v1_7_4.Task",
		"Id": t.id, "Name": "Task " + t.id, "TaskState": t.state, "TaskStatus": t.status,
		"PercentComplete": s.percent(t), "StartTime": t.start.UTC().Format(time.RFC3339),
		"TaskMonitor": taskMonitorsURI + "/" + t.id, "Messages": msgs,
		"Payload": map[string]any{"HttpOperation": "POST", "TargetUri": target, "JsonBody": t.jsonBody, "HttpHeaders": []string{}},
	}
	if t.done {
		doc["EndTime"] = s.now().UTC().Format(time.RFC3339)
	}
	return doc
}

func (s *Server) task(w http.ResponseWriter, id string) *fwTask {
	for _, t := range s.fw.tasks {
		if t.id == id && !t.untracked {
			return t
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no task "+id)
	return nil
}

func (s *Server) getTaskService(w http.ResponseWriter, _ *http.Request) {
	if s.noFirmware(w) || s.noTasks(w) {
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": taskServiceURI, "@odata.type": "#TaskService.v1_2_0.TaskService", "Id": "TaskService",
		"Name": "Task Service", "ServiceEnabled": true, "Tasks": link(tasksURI),
	})
}

func (s *Server) listTasks(w http.ResponseWriter, _ *http.Request) {
	if s.noFirmware(w) || s.noTasks(w) {
		return
	}
	s.mu.Lock()
	var members []any
	for _, t := range s.fw.tasks {
		if !t.untracked {
			members = append(members, link(tasksURI+"/"+t.id))
		}
	}
	s.mu.Unlock()
	writeCollection(w, tasksURI, "TaskCollection", "Task Collection", members)
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	if s.noFirmware(w) || s.noTasks(w) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirmware()
	if t := s.task(w, r.PathValue("id")); t != nil {
		writeJSON(w, http.StatusOK, "", s.taskDoc(t))
	}
}

// getTaskMonitor answers 202 with the task while it runs and 204 once it
// ended (DSP0266: the monitor then answers the operation's result).
func (s *Server) getTaskMonitor(w http.ResponseWriter, r *http.Request) {
	if s.noFirmware(w) || s.noTasks(w) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirmware()
	t := s.task(w, r.PathValue("id"))
	if t == nil {
		return
	}
	if !t.done {
		w.Header().Set("Location", taskMonitorsURI+"/"+t.id)
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusAccepted, "", s.taskDoc(t))
		return
	}
	if t.state != "Completed" {
		redfishError(w, http.StatusInternalServerError, "Update.1.0.ApplyFailed", "the update failed")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listInventory(w http.ResponseWriter, _ *http.Request) {
	if s.noFirmware(w) {
		return
	}
	s.mu.Lock()
	ids := slices.Sorted(maps.Keys(s.fw.versions))
	s.mu.Unlock()
	var members []any
	for _, id := range ids {
		members = append(members, link(s.fwInventoryURI()+"/"+id))
	}
	name := "Firmware Inventory"
	if s.cfg.Firmware.SoftwareInventory {
		name = "Software Inventory"
	}
	writeCollection(w, s.fwInventoryURI(), "SoftwareInventoryCollection", name, members)
}

func (s *Server) getInventory(w http.ResponseWriter, r *http.Request) {
	if s.noFirmware(w) {
		return
	}
	s.mu.Lock()
	s.settleFirmware()
	id := r.PathValue("id")
	v, ok := s.fw.versions[id]
	s.mu.Unlock()
	if !ok {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no firmware inventory member "+id)
		return
	}
	doc := map[string]any{
		"@odata.id": s.fwInventoryURI() + "/" + id, "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
		"Id": id, "Name": id + " firmware", "Version": v, "Updateable": true,
		"Status": map[string]string{"State": "Enabled", "Health": "OK"},
	}
	if rel, ok := s.cfg.Firmware.RelatedItems[id]; ok {
		links := make([]any, 0, len(rel))
		for _, r := range rel {
			links = append(links, link(r))
		}
		doc["RelatedItem"], doc["RelatedItem@odata.count"] = links, len(links)
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// FirmwareVersion is the version the firmware inventory reports for
// component ("" when there is no such component).
func (s *Server) FirmwareVersion(component string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirmware()
	return s.fw.versions[component]
}

// FirmwareTasks returns every update the BMC started, oldest first, its
// untracked ones included (FirmwareConfig.UntrackedUpdates).
func (s *Server) FirmwareTasks() []FirmwareTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirmware()
	out := make([]FirmwareTask, 0, len(s.fw.tasks))
	for _, t := range s.fw.tasks {
		ft := FirmwareTask{ID: t.id, URI: tasksURI + "/" + t.id, Monitor: taskMonitorsURI + "/" + t.id,
			TaskState: t.state, TaskStatus: t.status, Percent: s.percent(t), ImageURI: t.imageURI, Pushed: t.pushed,
			Component: t.component, Version: t.version, Untracked: t.untracked}
		if t.untracked {
			ft.URI, ft.Monitor = "", ""
		}
		out = append(out, ft)
	}
	return out
}
