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

// updateService is what the driver reads from the UpdateService.
type updateService struct {
	uri        string
	simple     string   // SimpleUpdate target, or ""
	actionInfo string   // SimpleUpdate's @Redfish.ActionInfo, or ""
	protocols  []string // TransferProtocol allowed values; nil: not stated
	push       string   // MultipartHttpPushUri, or ""
	inventory  string   // FirmwareInventory collection
}

// decodeUpdateService decodes an UpdateService document.
func decodeUpdateService(uri string, b []byte) (*updateService, error) {
	var doc struct {
		FirmwareInventory struct {
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
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, bmc.Permanent(fmt.Errorf("GET %s: the BMC answered invalid JSON: %w", uri, err))
	}
	us := &updateService{uri: uri, push: pathOf(doc.MultipartHTTPPushURI), inventory: pathOf(doc.FirmwareInventory.ID)}
	if a := doc.Actions.SimpleUpdate; a != nil {
		us.simple, us.actionInfo, us.protocols = pathOf(a.Target), pathOf(a.ActionInfo), a.Protocols
	}
	if us.inventory == "" {
		us.inventory = strings.TrimRight(uri, "/") + "/FirmwareInventory"
	}
	return us, nil
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
	var targets []string
	if img.Component != "" {
		targets = []string{strings.TrimRight(us.inventory, "/") + "/" + img.Component}
	}
	var ref bmc.FirmwareTaskRef
	switch {
	case us.simple != "":
		ref, err = d.simpleUpdate(ctx, us, img, targets)
	case us.push != "":
		ref, err = d.pushUpdate(ctx, us, img, targets)
	default:
		return ref, fmt.Errorf("the UpdateService %s offers neither SimpleUpdate nor MultipartHttpPushUri: %w", us.uri, bmc.ErrNotSupported)
	}
	if err != nil || !ref.IsZero() {
		return ref, err
	}
	// Accepted without naming a task (HPE iLO 5): look for it once.
	ref, found, err := d.findUpdate(ctx, img)
	if err != nil || !found {
		return ref, bmc.Permanent(fmt.Errorf("the BMC accepted the update of %s but named no task to follow, and none of its tasks names the image; the update may be running: check the BMC before starting again",
			bmc.RedactURL(img.URI)))
	}
	return ref, nil
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
	uri, monitor := ref.TaskURI, false
	if uri == "" && ref.MonitorURI != "" {
		uri, monitor = ref.MonitorURI, true
	}
	if uri == "" {
		tasks, err := d.tasksURI(ctx)
		if err != nil {
			return bmc.FirmwareTaskStatus{}, err
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

// tasksURI is the TaskService's Tasks collection.
func (d *Driver) tasksURI(ctx context.Context) (string, error) {
	svc := d.rootLink("Tasks")
	if svc == "" {
		return "", fmt.Errorf("the service root names no TaskService: %w", bmc.ErrNotSupported)
	}
	var doc struct {
		Tasks struct {
			ID string `json:"@odata.id"`
		}
	}
	if _, err := d.getJSON(ctx, svc, &doc); err != nil {
		if notFound(err) {
			return "", fmt.Errorf("GET %s: %w (%w)", svc, bmc.ErrNotSupported, err)
		}
		return "", fmt.Errorf("read TaskService: %w", err)
	}
	if doc.Tasks.ID == "" {
		return strings.TrimRight(svc, "/") + "/Tasks", nil
	}
	return pathOf(doc.Tasks.ID), nil
}

// maxTasksSearched bounds FindFirmwareUpdate: the newest tasks listed.
const maxTasksSearched = 64

// FindFirmwareUpdate implements [bmc.FirmwareUpdater]: it reads the
// newest 64 tasks of the TaskService and matches them to img (see
// docs/firmware.md).
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
	tasks, err := d.tasksURI(ctx)
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, err
	}
	members, err := d.collection(ctx, tasks)
	if err != nil {
		return bmc.FirmwareTaskRef{}, false, fmt.Errorf("list tasks %s: %w", tasks, err)
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

// FirmwareVersion implements [bmc.FirmwareUpdater]: one GET of the
// component's firmware inventory member; the collection is listed only to
// name the components when it is not there.
func (d *Driver) FirmwareVersion(ctx context.Context, component string) (string, error) {
	op := fmt.Sprintf("read firmware version of %q", component)
	if component == "" || strings.ContainsAny(component, "/?#") {
		return "", d.opErr(op, bmc.Permanent(fmt.Errorf("component %q: want a firmware inventory ID", component)))
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
	uri := strings.TrimRight(us.inventory, "/") + "/" + url.PathEscape(component)
	var doc struct{ Version string }
	_, err = d.getJSON(ctx, uri, &doc)
	if notFound(err) {
		members, lerr := d.collection(ctx, us.inventory)
		if lerr != nil {
			return "", d.opErr(op, fmt.Errorf("list firmware inventory %s: %w", us.inventory, lerr))
		}
		ids := make([]string, 0, len(members))
		for _, m := range members {
			ids = append(ids, path.Base(strings.TrimRight(m, "/")))
		}
		return "", d.opErr(op, bmc.Permanent(fmt.Errorf("the firmware inventory %s has no component %q (it has: %s)", us.inventory, component, list(ids))))
	}
	if err != nil {
		return "", d.opErr(op, err)
	}
	return doc.Version, nil
}
