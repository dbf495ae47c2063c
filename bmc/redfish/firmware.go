package redfish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish"

	"github.com/bmckit/bmckit/bmc"
)

// Firmware update (bmc.FirmwareUpdater): UpdateService.SimpleUpdate, or a
// multipart push where the BMC offers only that, followed through the
// TaskService. See docs/firmware.md.

var _ bmc.FirmwareTaskLister = (*Driver)(nil)

// updateService is what the driver reads from the UpdateService, and what
// it learned about the BMC's firmware since (guarded by the Driver's mu,
// which every call holds).
type updateService struct {
	uri        string
	simple     string   // SimpleUpdate target, or ""
	actionInfo string   // SimpleUpdate's @Redfish.ActionInfo, or ""
	protocols  []string // TransferProtocol allowed values; nil: not stated
	push       string   // MultipartHttpPushUri, or ""
	// inventory is the FirmwareInventory collection, else the
	// SoftwareInventory one (Intel), else "": never guessed.
	inventory string
	invName   string // "FirmwareInventory" or "SoftwareInventory"
	// oemHpe: the UpdateService has Oem.Hpe (HPE iLO's update state).
	oemHpe bool

	// learned is what starts showed: whether the BMC names a task for
	// the updates it starts (ListsFirmwareTasks).
	learned taskLearning
	// tasks is the TaskService's Tasks collection once read ("" when the
	// BMC has none); tasksRead says it was.
	tasks     string
	tasksRead bool
	// comps maps the system's firmware components to the URIs the BMC
	// listed them at (firmwareinventory.go).
	comps map[string]string
	// systems is the number of systems the service lists, 0 until read.
	systems int
}

// taskLearning is what the driver's starts showed about the BMC's tasks.
type taskLearning int

const (
	learnedNothing taskLearning = iota
	// learnedTasks: a start was answered with a task (or one was found
	// by its image right after).
	learnedTasks
	// learnedNoTask: a start was accepted (2xx) with no task named and
	// none found by its image.
	learnedNoTask
)

// decodeUpdateService decodes an UpdateService document.
func decodeUpdateService(uri string, b []byte) (*updateService, error) {
	var doc struct {
		FirmwareInventory struct {
			ID string `json:"@odata.id"`
		}
		SoftwareInventory struct {
			ID string `json:"@odata.id"`
		}
		MultipartHTTPPushURI string `json:"MultipartHttpPushUri"`
		Actions              struct {
			SimpleUpdate *struct {
				Target     string   `json:"target"`
				ActionInfo string   `json:"@Redfish.ActionInfo"`
				Protocols  []string `json:"TransferProtocol@Redfish.AllowableValues"`
			} `json:"#UpdateService.SimpleUpdate"`
		}
		Oem map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, bmc.Permanent(fmt.Errorf("GET %s: the BMC answered invalid JSON: %w", uri, err))
	}
	us := &updateService{uri: uri, push: pathOf(doc.MultipartHTTPPushURI), inventory: pathOf(doc.FirmwareInventory.ID), invName: "FirmwareInventory"}
	if a := doc.Actions.SimpleUpdate; a != nil {
		us.simple, us.actionInfo, us.protocols = pathOf(a.Target), pathOf(a.ActionInfo), a.Protocols
	}
	if us.inventory == "" {
		us.inventory, us.invName = pathOf(doc.SoftwareInventory.ID), "SoftwareInventory"
	}
	_, hpe := doc.Oem["Hpe"]
	_, hp := doc.Oem["Hp"]
	us.oemHpe = hpe || hp
	return us, nil
}

// hpeUpdates reports an HPE iLO, which runs updates outside its
// TaskService and answers SimpleUpdate with no task: the UpdateService has
// Oem.Hpe (or iLO 4's Oem.Hp), or the service root has, or the service
// root's Vendor is HPE.
func (d *Driver) hpeUpdates(us *updateService) bool {
	if us.oemHpe {
		return true
	}
	var root struct {
		Vendor string
		Oem    map[string]json.RawMessage
	}
	if json.Unmarshal(d.s.wire.serviceRoot(), &root) != nil {
		return false
	}
	_, hpe := root.Oem["Hpe"]
	_, hp := root.Oem["Hp"]
	return hpe || hp || strings.EqualFold(root.Vendor, "HPE") || strings.EqualFold(root.Vendor, "Hewlett Packard Enterprise")
}

// rootLink is the @odata.id of a link of the service root, or "".
func (d *Driver) rootLink(name string) string {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(d.s.wire.serviceRoot(), &root); err != nil {
		return ""
	}
	var l struct {
		ID string `json:"@odata.id"`
	}
	if json.Unmarshal(root[name], &l) != nil {
		return ""
	}
	return pathOf(l.ID)
}

// notFound reports whether err is a 404 or 410 answer.
func notFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusGone)
}

// updateServiceDoc reads the UpdateService, once per driver.
func (d *Driver) updateServiceDoc(ctx context.Context) (*updateService, error) {
	if d.upd != nil {
		return d.upd, nil
	}
	uri := d.rootLink("UpdateService")
	if uri == "" {
		return nil, fmt.Errorf("the service root names no UpdateService: %w", bmc.ErrNotSupported)
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("GET %s: %w (%w)", uri, bmc.ErrNotSupported, err)
		}
		return nil, fmt.Errorf("read UpdateService: %w", err)
	}
	us, err := decodeUpdateService(uri, raw)
	if err != nil {
		return nil, err
	}
	d.upd = us
	return us, nil
}

// StartFirmwareUpdate implements [bmc.FirmwareUpdater]: SimpleUpdate with
// the image's URI where the BMC offers it, else a multipart push of the
// image, which the driver fetches and streams (Options.MaxFirmwareImage,
// Options.FirmwareUploadTimeout). The request is sent once, never retried.
// With img.Component set, Targets names the URI the BMC listed that
// component at, among the system's firmware (see FirmwareVersion); a
// component the system does not have is refused before the request. An
// update the BMC accepts without naming a task (HPE iLO, BMCs without a
// TaskService), and whose task is not found by its image right after, is
// returned as a ref whose MonitorURI is the UpdateService: its status is
// iLO's UpdateService.Oem.Hpe.State where the BMC has one, else Gone from
// the start, and the component's version tells the rest.
func (d *Driver) StartFirmwareUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, error) {
	const op = "start firmware update"
	if err := img.Validate(); err != nil {
		return bmc.FirmwareTaskRef{}, d.opErr(op, err)
	}
	done, err := d.begin()
	if err != nil {
		return bmc.FirmwareTaskRef{}, d.opErr(op, err)
	}
	defer done()
	ref, err := d.startUpdate(ctx, img)
	if err != nil {
		return bmc.FirmwareTaskRef{}, d.opErr(op, err)
	}
	return ref, nil
}

func (d *Driver) startUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, error) {
	us, err := d.updateServiceDoc(ctx)
	if err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	if us.simple == "" && us.push == "" {
		return bmc.FirmwareTaskRef{}, fmt.Errorf("the UpdateService %s offers neither SimpleUpdate nor MultipartHttpPushUri: %w", us.uri, bmc.ErrNotSupported)
	}
	var targets []string
	if img.Component != "" {
		// Only a member the BMC listed, and the system's: never a
		// guessed path, never another node's component.
		m, err := d.firmwareMember(ctx, us, img.Component)
		if err != nil {
			return bmc.FirmwareTaskRef{}, fmt.Errorf("target of the update: %w", err)
		}
		targets = []string{m.uri}
	}
	var ref bmc.FirmwareTaskRef
	if us.simple != "" {
		ref, err = d.simpleUpdate(ctx, us, img, targets)
	} else {
		ref, err = d.pushUpdate(ctx, us, img, targets)
	}
	if err != nil {
		return ref, err
	}
	if !ref.IsZero() {
		if us.learned == learnedNothing {
			us.learned = learnedTasks
		}
		return ref, nil
	}
	// Accepted (2xx) without naming a task (HPE iLO, BMCs without a
	// TaskService): look for it once among the tasks; else the ref names
	// the UpdateService, whose status tells what it can (iLO's
	// Oem.Hpe.State) and the version the rest.
	found, ok, ferr := d.findUpdate(ctx, img)
	if ferr == nil && ok && found.TaskURI != "" {
		if us.learned == learnedNothing {
			us.learned = learnedTasks
		}
		return found, nil
	}
	us.learned = learnedNoTask
	if ferr != nil {
		d.logger(ctx).V(1).Info("the BMC accepted the firmware update without naming a task; looking for it failed", "image", bmc.RedactURL(img.URI), "error", ferr.Error())
	}
	return bmc.FirmwareTaskRef{MonitorURI: us.uri}, nil
}

func (d *Driver) simpleUpdate(ctx context.Context, us *updateService, img bmc.FirmwareImage, targets []string) (bmc.FirmwareTaskRef, error) {
	body := map[string]any{"ImageURI": img.URI}
	allowed, err := d.allowedValues(ctx, us.protocols, us.actionInfo, "TransferProtocol")
	if err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	if allowed != nil {
		scheme, _, _ := strings.Cut(img.URI, "://")
		want := strings.ToUpper(scheme)
		if !slices.Contains(allowed, want) {
			return bmc.FirmwareTaskRef{}, fmt.Errorf("SimpleUpdate at %s does not offer TransferProtocol %s (advertised: %s): %w", us.simple, want, list(allowed), bmc.ErrNotSupported)
		}
		body["TransferProtocol"] = want
	}
	if targets != nil {
		body["Targets"] = targets
	}
	var ref bmc.FirmwareTaskRef
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(us.simple, body)
		if err != nil {
			return err
		}
		ref = refFromAnswer(resp)
		return nil
	})
	return ref, err
}

// refFromAnswer reads the task an update's answer names and closes it.
func refFromAnswer(resp *http.Response) bmc.FirmwareTaskRef {
	defer drain(resp)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return taskRefFrom(resp.Header.Get("Location"), b)
}

// taskRefFrom builds a task ref from an answer's Location header and body
// (a Task, or nothing). bmcweb answers with the Task and a Location of
// .../Tasks/ID/Monitor; DMTF's mockups with .../TaskMonitors/ID; iDRAC with
// a Location of the task itself.
func taskRefFrom(location string, body []byte) bmc.FirmwareTaskRef {
	var doc struct {
		ID          string `json:"@odata.id"`
		Type        string `json:"@odata.type"`
		TaskID      string `json:"Id"`
		TaskState   string
		TaskMonitor string
	}
	_ = json.Unmarshal(body, &doc) // an answer without a Task body is fine
	var ref bmc.FirmwareTaskRef
	if doc.ID != "" && (doc.TaskState != "" || strings.HasPrefix(doc.Type, "#Task.")) {
		ref.TaskURI, ref.TaskID = pathOf(doc.ID), doc.TaskID
	}
	loc := pathOf(location)
	if loc == "" {
		loc = pathOf(doc.TaskMonitor)
	}
	if loc != "" && !sameURI(loc, ref.TaskURI) {
		ref.MonitorURI = loc
	}
	if ref.TaskURI == "" && loc != "" {
		// .../Tasks/ID/Monitor: the task is its parent; .../Tasks/ID: the
		// task itself.
		p := strings.TrimRight(loc, "/")
		if base := path.Base(p); strings.EqualFold(base, "Monitor") {
			p = path.Dir(p)
		}
		if strings.EqualFold(path.Base(path.Dir(p)), "Tasks") {
			ref.TaskURI = p
			if sameURI(p, loc) {
				ref.MonitorURI = ""
			}
		}
	}
	if ref.TaskID == "" && ref.TaskURI != "" {
		ref.TaskID = path.Base(strings.TrimRight(ref.TaskURI, "/"))
	}
	return ref
}

// noSeek lets a stream pass where gofish wants an io.ReadSeeker; nothing
// seeks a request body that has no GetBody.
type noSeek struct{ io.Reader }

func (noSeek) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }

// switchWriter writes to w, which the caller may swap.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// boundedReader fails once more than max bytes were read.
type boundedReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n, fmt.Errorf("the image is larger than Options.MaxFirmwareImage (%d bytes)", b.max)
	}
	return n, err
}

// pushUpdate fetches the image and streams it to the multipart push URI.
func (d *Driver) pushUpdate(ctx context.Context, us *updateService, img bmc.FirmwareImage, targets []string) (bmc.FirmwareTaskRef, error) {
	opts := d.s.opts
	uctx, cancel := context.WithTimeout(withCounts(ctx, d.counts), opts.FirmwareUploadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(uctx, http.MethodGet, img.URI, nil)
	if err != nil {
		return bmc.FirmwareTaskRef{}, bmc.Permanent(fmt.Errorf("firmware image URI %s: %v", bmc.RedactURL(img.URI), redactErr(err)))
	}
	resp, err := opts.FirmwareImageClient.Do(req)
	if err != nil {
		return bmc.FirmwareTaskRef{}, bmc.Transient(fmt.Errorf("fetch the firmware image %s to push it: %v", bmc.RedactURL(img.URI), redactErr(err)))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("fetch the firmware image %s to push it: the image server answered %s", bmc.RedactURL(img.URI), resp.Status)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return bmc.FirmwareTaskRef{}, bmc.Transient(err)
		}
		return bmc.FirmwareTaskRef{}, bmc.Permanent(err)
	}
	if resp.ContentLength > opts.MaxFirmwareImage {
		return bmc.FirmwareTaskRef{}, bmc.Permanent(fmt.Errorf("the firmware image %s is %d bytes, more than Options.MaxFirmwareImage (%d)",
			bmc.RedactURL(img.URI), resp.ContentLength, opts.MaxFirmwareImage))
	}
	// The multipart framing around the image, built ahead so that the
	// upload's length is known when the image's is.
	var pre, post bytes.Buffer
	sw := &switchWriter{w: &pre}
	mw := multipart.NewWriter(sw)
	params := map[string]any{}
	if targets != nil {
		params["Targets"] = targets
	}
	pw, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="UpdateParameters"`}, "Content-Type": {"application/json"}})
	if err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	if err := json.NewEncoder(pw).Encode(params); err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	if _, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {fmt.Sprintf(`form-data; name="UpdateFile"; filename=%q`, imageFileName(img.URI))},
		"Content-Type":        {"application/octet-stream"}}); err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	sw.w = &post
	if err := mw.Close(); err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	image := &boundedReader{r: resp.Body, max: opts.MaxFirmwareImage}
	body := io.MultiReader(bytes.NewReader(pre.Bytes()), image, bytes.NewReader(post.Bytes()))
	var headers map[string]string
	if resp.ContentLength >= 0 {
		headers = map[string]string{"Content-Length": strconv.FormatInt(int64(pre.Len())+resp.ContentLength+int64(post.Len()), 10)}
	}
	if _, err := d.s.current(); err != nil {
		return bmc.FirmwareTaskRef{}, err
	}
	d.readScope = nil
	// Sent once, within FirmwareUploadTimeout rather than RequestTimeout,
	// through the session's transport (budget, fence, counting). A 401 is
	// not answered by logging in again: the stream is spent.
	answer, err := d.s.client.WithContext(uctx).RunRawRequestWithHeaders(http.MethodPost, us.push, noSeek{body}, mw.FormDataContentType(), headers)
	if err != nil {
		if uctx.Err() != nil && ctx.Err() == nil {
			return bmc.FirmwareTaskRef{}, bmc.Transient(fmt.Errorf("the upload did not finish within Options.FirmwareUploadTimeout %s: %w", opts.FirmwareUploadTimeout, context.DeadlineExceeded))
		}
		return bmc.FirmwareTaskRef{}, classify(redactErr(err))
	}
	return refFromAnswer(answer), nil
}

// imageFileName is the last path element of an image URI, never its query.
func imageFileName(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || path.Base(u.Path) == "/" || path.Base(u.Path) == "." {
		return "firmware.bin"
	}
	return path.Base(u.Path)
}

// redactErr replaces a *url.Error (which prints the whole URL, query
// included) with its URL redacted.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: bmc.RedactURL(ue.URL), Err: ue.Err}
	}
	return err
}

// taskDoc is what the driver reads from a Task.
type taskDoc struct {
	ID              string `json:"@odata.id"`
	TaskID          string `json:"Id"`
	TaskState       string
	TaskStatus      string
	PercentComplete *float64
	Messages        []struct {
		MessageID   string `json:"MessageId"`
		Message     string
		MessageArgs []any
	}
	Payload struct {
		TargetURI string          `json:"TargetUri"`
		JSONBody  json.RawMessage `json:"JsonBody"`
	}
}

// decodeTask decodes a Task document.
func decodeTask(uri string, b []byte) (*taskDoc, error) {
	var t taskDoc
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, bmc.Permanent(fmt.Errorf("GET %s: the BMC answered a task that is not valid JSON: %w", uri, err))
	}
	return &t, nil
}

// imageURI is the ImageURI of the request the task carries out, from
// Payload.JsonBody (a string holding JSON, per the schema, or an object).
func (t *taskDoc) imageURI() string {
	body := []byte(t.Payload.JSONBody)
	var s string
	if json.Unmarshal(body, &s) == nil {
		body = []byte(s)
	}
	var req struct{ ImageURI string }
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	return req.ImageURI
}

func (t *taskDoc) args() []string {
	var out []string
	for _, m := range t.Messages {
		for _, a := range m.MessageArgs {
			if s, ok := a.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// status maps the task to a bmc.FirmwareTaskStatus.
func (t *taskDoc) status() bmc.FirmwareTaskStatus {
	st := bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskRunning, Percent: -1}
	switch t.TaskState {
	case "Completed":
		st.State = bmc.FirmwareTaskCompleted
		if t.TaskStatus == "Critical" {
			st.State = bmc.FirmwareTaskFailed
		}
	case "Exception", "Killed", "Cancelled":
		st.State = bmc.FirmwareTaskFailed
	}
	if p := t.PercentComplete; p != nil && *p >= 0 && *p <= 100 {
		st.Percent = int(*p)
	}
	for _, m := range t.Messages {
		id := m.MessageID
		switch {
		case strings.HasSuffix(id, ".AwaitToActivate") || strings.Contains(id, ".AwaitToActivate"):
			st.NeedsReset = true
		case strings.Contains(id, ".ResetRequired"):
			st.NeedsReset = true
			if len(m.MessageArgs) > 0 {
				if s, ok := m.MessageArgs[0].(string); ok {
					switch {
					case strings.Contains(s, "/Managers/"):
						st.Reset = bmc.FirmwareResetBMC
					case strings.Contains(s, "/Systems/"):
						st.Reset = bmc.FirmwareResetSystem
					}
				}
			}
		}
		text := shorten(redactURLs(m.Message))
		if id != "" {
			text = id + ": " + text
		}
		st.Messages = append(st.Messages, text)
	}
	if n := len(st.Messages); n > bmc.MaxFirmwareMessages {
		st.Messages = st.Messages[n-bmc.MaxFirmwareMessages:]
	}
	return st
}

// redactURLs prints every http(s) URL in s through bmc.RedactURL.
func redactURLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "http://")
		if j := strings.Index(s, "https://"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end := strings.IndexAny(s[i:], " \t\n'\"<>")
		if end < 0 {
			end = len(s) - i
		}
		b.WriteString(bmc.RedactURL(s[i : i+end]))
		s = s[i+end:]
	}
}

// FirmwareUpdateStatus implements [bmc.FirmwareUpdater]: one GET of the
// task (of the task monitor when the ref names only that).
func (d *Driver) FirmwareUpdateStatus(ctx context.Context, ref bmc.FirmwareTaskRef) (bmc.FirmwareTaskStatus, error) {
	const op = "read firmware update task"
	if ref.IsZero() {
		return bmc.FirmwareTaskStatus{}, d.opErr(op, bmc.Permanent(errors.New("the task ref names no task")))
	}
	done, err := d.begin()
	if err != nil {
		return bmc.FirmwareTaskStatus{}, d.opErr(op, err)
	}
	defer done()
	st, err := d.taskStatus(ctx, ref)
	if err != nil {
		return st, d.opErr(op+" "+ref.String(), err)
	}
	return st, nil
}

func (d *Driver) taskStatus(ctx context.Context, ref bmc.FirmwareTaskRef) (bmc.FirmwareTaskStatus, error) {
	if ref.TaskURI == "" && samePath(ref.MonitorURI, d.rootLink("UpdateService")) {
		// An update the BMC accepted without naming a task.
		return d.updateState(ctx, pathOf(ref.MonitorURI))
	}
	uri, monitor := ref.TaskURI, false
	if uri == "" && ref.MonitorURI != "" {
		uri, monitor = ref.MonitorURI, true
	}
	if uri == "" {
		us, err := d.updateServiceDoc(ctx)
		if err != nil {
			return bmc.FirmwareTaskStatus{}, err
		}
		tasks, err := d.tasksCollection(ctx, us)
		if err != nil {
			return bmc.FirmwareTaskStatus{}, err
		}
		if tasks == "" {
			return bmc.FirmwareTaskStatus{}, fmt.Errorf("the ref names only task %q, and the BMC has no TaskService to find it in: %w", shorten(ref.TaskID), bmc.ErrNotSupported)
		}
		uri = strings.TrimRight(tasks, "/") + "/" + url.PathEscape(ref.TaskID)
	}
	var code int
	var body []byte
	err := d.do(ctx, true, func(c *gofish.APIClient) error {
		resp, err := c.Get(uri)
		if err != nil {
			return err
		}
		defer drain(resp)
		code = resp.StatusCode
		body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return err
	})
	if notFound(err) {
		return bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskGone, Percent: -1}, nil
	}
	if err != nil {
		return bmc.FirmwareTaskStatus{}, err
	}
	if monitor && code != http.StatusAccepted && !bytes.Contains(body, []byte(`"TaskState"`)) {
		// A monitor whose operation ended answers the operation's
		// result (DSP0266): a 2xx is success.
		return bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskCompleted, Percent: 100}, nil
	}
	t, err := decodeTask(uri, body)
	if err != nil {
		return bmc.FirmwareTaskStatus{}, err
	}
	return t.status(), nil
}

// tasksCollection is the TaskService's Tasks collection, read once per
// driver: "" when the service root links no TaskService, the TaskService
// answers 404, or it links no Tasks collection (never guessed).
func (d *Driver) tasksCollection(ctx context.Context, us *updateService) (string, error) {
	if us.tasksRead {
		return us.tasks, nil
	}
	svc := d.rootLink("Tasks")
	if svc != "" {
		var doc struct {
			Tasks struct {
				ID string `json:"@odata.id"`
			}
		}
		if _, err := d.getJSON(ctx, svc, &doc); err != nil {
			if !notFound(err) {
				return "", fmt.Errorf("read TaskService: %w", err)
			}
		} else {
			us.tasks = pathOf(doc.Tasks.ID)
		}
	}
	us.tasksRead = true
	return us.tasks, nil
}

// updateState reads the state of an update the BMC accepted without
// naming a task, from its UpdateService (one GET): HPE iLO's
// Oem.Hpe.State and FlashProgressPercent. States Idle, Uploading,
// Verifying, Writing, Updating, Complete and Error (iLO 5): Complete is
// Completed, Error Failed, Idle (no update in progress, or not yet) Gone,
// any other Running. Without that state the update is Gone from the
// start: only the component's version tells.
func (d *Driver) updateState(ctx context.Context, uri string) (bmc.FirmwareTaskStatus, error) {
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if notFound(err) {
			return bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskGone, Percent: -1}, nil
		}
		return bmc.FirmwareTaskStatus{}, err
	}
	return hpeUpdateStatus(raw), nil
}

// hpeUpdateStatus maps an UpdateService document's Oem.Hpe update state.
func hpeUpdateStatus(b []byte) bmc.FirmwareTaskStatus {
	var doc struct {
		Oem struct {
			Hpe map[string]json.RawMessage
		}
	}
	_ = json.Unmarshal(b, &doc) // an UpdateService without the state is Gone
	var state string
	_ = json.Unmarshal(doc.Oem.Hpe["State"], &state)
	st := bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskRunning, Percent: -1}
	var pct float64
	if json.Unmarshal(doc.Oem.Hpe["FlashProgressPercent"], &pct) == nil && pct >= 0 && pct <= 100 {
		st.Percent = int(pct)
	}
	switch {
	case state == "":
		return bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskGone, Percent: -1, Messages: []string{
			"the BMC named no task for the update and reports no update state: only the component's version tells"}}
	case strings.EqualFold(state, "Idle"):
		st.State, st.Percent = bmc.FirmwareTaskGone, -1
	case strings.EqualFold(state, "Complete"):
		st.State, st.Percent = bmc.FirmwareTaskCompleted, 100
	case strings.EqualFold(state, "Error"):
		st.State = bmc.FirmwareTaskFailed
	}
	st.Messages = []string{"UpdateService.Oem.Hpe.State: " + shorten(redactURLs(state))}
	return st
}

// maxTasksSearched bounds FindFirmwareUpdate: the newest tasks listed.
const maxTasksSearched = 64

// FindFirmwareUpdate implements [bmc.FirmwareUpdater]: it reads the
// newest 64 tasks of the TaskService and matches them to img (see
// docs/firmware.md). A BMC without a TaskService (or whose TaskService
// links no Tasks collection, or answers 404) has no task to find: found
// is false, not an error. On HPE iLO, which runs updates outside its
// TaskService, an update in progress (UpdateService.Oem.Hpe.State other
// than Idle, Complete and Error) is found whatever its image, as a running
// multipart push is: the ref names the UpdateService, and the version
// verifies which image it was.
func (d *Driver) FindFirmwareUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, bool, error) {
	const op = "find firmware update task"
	if err := img.Validate(); err != nil {
		return bmc.FirmwareTaskRef{}, false, d.opErr(op, err)
	}
	done, err := d.begin()
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, d.opErr(op, err)
	}
	defer done()
	ref, found, err := d.findUpdate(ctx, img)
	if err != nil {
		return ref, false, d.opErr(op, err)
	}
	return ref, found, nil
}

func (d *Driver) findUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, bool, error) {
	us, err := d.updateServiceDoc(ctx)
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, err
	}
	tasks, err := d.tasksCollection(ctx, us)
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, err
	}
	var members []string
	if tasks != "" {
		members, err = d.collection(ctx, tasks)
		if err != nil && !notFound(err) {
			return bmc.FirmwareTaskRef{}, false, fmt.Errorf("list tasks %s: %w", tasks, err)
		}
	}
	slices.SortStableFunc(members, func(a, b string) int { return compareTaskIDs(path.Base(a), path.Base(b)) })
	if len(members) > maxTasksSearched {
		members = members[len(members)-maxTasksSearched:]
	}
	var best bmc.FirmwareTaskRef
	bestRunning, found := false, false
	for i := len(members) - 1; i >= 0; i-- { // newest first
		m := pathOf(members[i])
		var raw json.RawMessage
		if _, err := d.getJSON(ctx, m, &raw); err != nil {
			if notFound(err) {
				continue // deleted meanwhile
			}
			return bmc.FirmwareTaskRef{}, false, fmt.Errorf("read task %s: %w", m, err)
		}
		t, err := decodeTask(m, raw)
		if err != nil {
			return bmc.FirmwareTaskRef{}, false, err
		}
		running := !t.status().State.Terminal()
		if !taskMatches(t, img, us.push, running) {
			continue
		}
		if !found || (running && !bestRunning) {
			best, bestRunning, found = bmc.FirmwareTaskRef{TaskURI: m, TaskID: t.TaskID}, running, true
		}
		if running {
			break
		}
	}
	if bestRunning || !d.hpeUpdates(us) {
		return best, found, nil
	}
	// iLO: an update it runs outside the TaskService, still running.
	st, err := d.updateState(ctx, us.uri)
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, fmt.Errorf("read the update state of %s: %w", us.uri, err)
	}
	if st.State == bmc.FirmwareTaskRunning {
		return bmc.FirmwareTaskRef{MonitorURI: us.uri}, true, nil
	}
	return best, found, nil
}

// taskMatches reports whether t updates with img: its request's ImageURI,
// or a message argument, is the image's URI (or its redacted form); or,
// while running, it carries out a multipart push (which never names the
// URI).
func taskMatches(t *taskDoc, img bmc.FirmwareImage, push string, running bool) bool {
	if u := t.imageURI(); u != "" {
		return u == img.URI
	}
	red := bmc.RedactURL(img.URI)
	for _, a := range t.args() {
		if a == img.URI || a == red {
			return true
		}
	}
	if push == "" || !sameURI(pathOf(t.Payload.TargetURI), push) {
		return false
	}
	// A push task names no image. One still running is taken; so is one
	// that finished and waits for a reset to activate its image on the
	// component asked for (a staged update: starting another would flash
	// twice, and only its version after the reset tells which image it
	// was).
	return running || t.status().NeedsReset && img.Component != "" && slices.Contains(t.args(), img.Component)
}

// compareTaskIDs orders task IDs numerically where both are numbers.
func compareTaskIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return int(min(max(x-y, -1), 1))
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return 0 // keep the listing's order
}

// FirmwareVersion implements [bmc.FirmwareUpdater]: the Version of the
// system's firmware inventory member whose Id is component, in
// UpdateService.FirmwareInventory, else UpdateService.SoftwareInventory
// (Intel). Once the driver found the member, one GET of the URI the BMC
// listed it at; the first time, the collection is listed and its members
// read until one has that Id (the one named like it first). A member of
// another system of a multi-node BMC (its RelatedItem names other systems
// only) is not the system's: unknown, like a component the inventory does
// not have, a permanent error naming it and the system's components. An
// UpdateService naming neither inventory: ErrNotSupported.
func (d *Driver) FirmwareVersion(ctx context.Context, component string) (string, error) {
	op := fmt.Sprintf("read firmware version of %q", shorten(component))
	if component == "" || strings.ContainsAny(component, "/?#") {
		return "", d.opErr(op, bmc.Permanent(fmt.Errorf("component %q: want a firmware inventory ID", shorten(component))))
	}
	done, err := d.begin()
	if err != nil {
		return "", d.opErr(op, err)
	}
	defer done()
	us, err := d.updateServiceDoc(ctx)
	if err != nil {
		return "", d.opErr(op, err)
	}
	m, err := d.firmwareMember(ctx, us, component)
	if err != nil {
		return "", d.opErr(op, err)
	}
	return m.Version, nil
}

// ListsFirmwareTasks implements [bmc.FirmwareTaskLister]: whether every
// update this BMC starts is a task FindFirmwareUpdate can find. In order:
//
//  1. What this driver's starts showed: false once a start was accepted
//     (2xx) without naming a task and none of the tasks named its image
//     right after; else true once a start was answered with a task (or its
//     task was found that way).
//  2. False on HPE iLO, which answers SimpleUpdate with no task and runs
//     the update outside its TaskService (UpdateService.Oem.Hpe.State): the
//     UpdateService or the service root has Oem.Hpe (or Oem.Hp), or the
//     service root's Vendor is HPE.
//  3. True when the service root links a TaskService whose document links
//     a Tasks collection that answers a GET; false when there is none (no
//     link, or 404).
//
// A BMC without an UpdateService: an error wrapping ErrNotSupported.
// Transient failures reading the service are errors. It changes nothing.
func (d *Driver) ListsFirmwareTasks(ctx context.Context) (bool, error) {
	const op = "tell whether the BMC lists firmware tasks"
	done, err := d.begin()
	if err != nil {
		return false, d.opErr(op, err)
	}
	defer done()
	us, err := d.updateServiceDoc(ctx)
	if err != nil {
		return false, d.opErr(op, err)
	}
	switch {
	case us.learned == learnedNoTask:
		return false, nil
	case us.learned == learnedTasks:
		return true, nil
	case d.hpeUpdates(us):
		return false, nil
	}
	tasks, err := d.tasksCollection(ctx, us)
	if err != nil || tasks == "" {
		return false, d.opErrOrNil(op, err)
	}
	if _, err := d.collection(ctx, tasks); err != nil {
		if notFound(err) {
			return false, nil
		}
		return false, d.opErr(op, fmt.Errorf("list tasks %s: %w", tasks, err))
	}
	return true, nil
}

// opErrOrNil is opErr, or nil for a nil err.
func (d *Driver) opErrOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return d.opErr(op, err)
}
