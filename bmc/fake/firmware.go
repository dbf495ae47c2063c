package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// FirmwareOptions configures the fake's firmware updates
// ([bmc.FirmwareUpdater]), with the semantics of redfishtest's.
type FirmwareOptions struct {
	// Components are the firmware components and their initial versions.
	// Defaults to BMC and BIOS at 1.0.0.
	Components map[string]string
	// Images are the images the BMC can install, by URI. Starting an
	// update with another URI succeeds, and its task fails (as a BMC that
	// cannot fetch or read the image). Defaults to none.
	Images map[string]FirmwareImageInfo
	// Duration is how long an update task runs, on the BMC's Clock; its
	// percent grows with it. Defaults to 0: a task has completed when it is
	// first read.
	Duration time.Duration
	// Fail ends every update task failed; versions stay.
	Fail bool
	// ActivateOnReset completes update tasks asking for a reset
	// (NeedsReset): the version changes at the server's next boot, or for
	// component BMC at the next ResetBMC.
	ActivateOnReset bool
	// NoTasks makes the BMC name no task for an update and list none, as
	// HPE iLO runs updates outside its TaskService: StartFirmwareUpdate
	// returns a zero ref, FindFirmwareUpdate finds nothing, and
	// ListsFirmwareTasks answers false. The update still runs (the version
	// changes when it ends).
	NoTasks bool
}

// FirmwareImageInfo is what an image installs.
type FirmwareImageInfo struct {
	Component, Version string
}

// FirmwareTask is a snapshot of one update task of the fake.
type FirmwareTask struct {
	Ref                bmc.FirmwareTaskRef
	Image              bmc.FirmwareImage
	State              bmc.FirmwareTaskState
	Component, Version string
}

type fwTask struct {
	id      int
	image   bmc.FirmwareImage
	info    FirmwareImageInfo
	known   bool
	start   time.Time
	done    bool
	state   bmc.FirmwareTaskState
	reset   bmc.FirmwareResetTarget
	message string
}

type firmware struct {
	versions map[string]string
	pending  map[string]string
	tasks    []*fwTask
}

func (b *BMC) initFirmware() {
	c := b.opts.Firmware.Components
	if c == nil {
		c = map[string]string{"BMC": "1.0.0", "BIOS": "1.0.0"}
	}
	b.fw = firmware{versions: maps.Clone(c), pending: map[string]string{}}
}

// settleFirmware lands due power changes (a boot activates staged
// firmware) and ends tasks whose time came; called with b.mu held.
func (b *BMC) settleFirmware() {
	b.settle()
	b.settleTasks()
}

func (b *BMC) settleTasks() {
	now := b.clock.Now()
	o := b.opts.Firmware
	for _, t := range b.fw.tasks {
		if t.done || now.Before(t.start.Add(o.Duration)) {
			continue
		}
		t.done = true
		switch {
		case !t.known:
			t.state, t.message = bmc.FirmwareTaskFailed, "TransferFailed: the BMC cannot read the image"
		case o.Fail:
			t.state, t.message = bmc.FirmwareTaskFailed, "ApplyFailed: installing the image on "+t.info.Component+" failed"
		case o.ActivateOnReset:
			t.state, t.message = bmc.FirmwareTaskCompleted, "AwaitToActivate: a reset activates the image on "+t.info.Component
			t.reset = bmc.FirmwareResetSystem
			if t.info.Component == "BMC" {
				t.reset = bmc.FirmwareResetBMC
			}
			b.fw.pending[t.info.Component] = t.info.Version
		default:
			t.state, t.message = bmc.FirmwareTaskCompleted, "UpdateSuccessful: "+t.info.Component+" is at "+t.info.Version
			b.fw.versions[t.info.Component] = t.info.Version
		}
	}
}

// activateFirmware applies pending versions: bmcReset for component BMC,
// else a server boot. Called with b.mu held.
func (b *BMC) activateFirmware(bmcReset bool) {
	b.settleTasks()
	for c, v := range b.fw.pending {
		if (c == "BMC") == bmcReset {
			b.fw.versions[c] = v
			delete(b.fw.pending, c)
		}
	}
}

func (b *BMC) fwStatus(t *fwTask) bmc.FirmwareTaskStatus {
	st := bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskRunning, Percent: 0}
	if t.done {
		st.State, st.Percent = t.state, 100
		st.Messages = []string{t.message}
		if t.reset != "" {
			st.NeedsReset, st.Reset = b.fw.pending[t.info.Component] != "", t.reset
			if !st.NeedsReset {
				st.Reset = ""
			}
		}
		return st
	}
	if d := b.opts.Firmware.Duration; d > 0 {
		st.Percent = min(99, int(b.clock.Now().Sub(t.start)*100/d))
	}
	return st
}

func refOf(t *fwTask) bmc.FirmwareTaskRef {
	id := strconv.Itoa(t.id)
	return bmc.FirmwareTaskRef{TaskURI: "/fake/Tasks/" + id, TaskID: id}
}

// FirmwareTasks returns the update tasks started so far, oldest first.
func (b *BMC) FirmwareTasks() []FirmwareTask {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleFirmware()
	out := make([]FirmwareTask, 0, len(b.fw.tasks))
	for _, t := range b.fw.tasks {
		out = append(out, FirmwareTask{Ref: refOf(t), Image: t.image, State: b.fwStatus(t).State, Component: t.info.Component, Version: t.info.Version})
	}
	return out
}

// FirmwareVersion is the version of component ("" when there is none).
func (b *BMC) FirmwareVersion(component string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleFirmware()
	return b.fw.versions[component]
}

func (b *BMC) lacksFirmware() error {
	if b.lacks[bmc.CapabilityFirmwareUpdate] {
		return fmt.Errorf("firmware update: %w", bmc.ErrNotSupported)
	}
	return nil
}

// StartFirmwareUpdate implements [bmc.FirmwareUpdater]: it starts a task
// installing the image ([FirmwareOptions]).
func (d *Driver) StartFirmwareUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, error) {
	var ref bmc.FirmwareTaskRef
	err := d.do(ctx, MethodStartFirmwareUpdate, []any{bmc.RedactURL(img.URI), img.Component}, func() error {
		b := d.bmc
		if err := b.lacksFirmware(); err != nil {
			return err
		}
		if err := img.Validate(); err != nil {
			return err
		}
		info, known := b.opts.Firmware.Images[img.URI]
		if known && img.Component != "" && info.Component != img.Component {
			return bmc.Permanent(fmt.Errorf("the image %s is for component %s, not %s", bmc.RedactURL(img.URI), info.Component, img.Component))
		}
		if known {
			if _, ok := b.fw.versions[info.Component]; !ok {
				known = false
			}
		}
		t := &fwTask{id: len(b.fw.tasks) + 1, image: img, info: info, known: known, start: b.clock.Now()}
		b.fw.tasks = append(b.fw.tasks, t)
		if !b.opts.Firmware.NoTasks {
			ref = refOf(t)
		}
		return nil
	})
	return ref, err
}

// FindFirmwareUpdate implements [bmc.FirmwareUpdater]: the newest task
// for the image's URI, a running one first.
func (d *Driver) FindFirmwareUpdate(ctx context.Context, img bmc.FirmwareImage) (bmc.FirmwareTaskRef, bool, error) {
	var ref bmc.FirmwareTaskRef
	var found bool
	err := d.do(ctx, MethodFindFirmwareUpdate, []any{bmc.RedactURL(img.URI)}, func() error {
		b := d.bmc
		if err := b.lacksFirmware(); err != nil {
			return err
		}
		if err := img.Validate(); err != nil {
			return err
		}
		b.settleFirmware()
		for _, t := range slices.Backward(b.fw.tasks) {
			if b.opts.Firmware.NoTasks {
				break // it lists none
			}
			if t.image.URI != img.URI {
				continue
			}
			if !found || !t.done {
				ref, found = refOf(t), true
			}
			if !t.done {
				break
			}
		}
		return nil
	})
	return ref, found, err
}

// FirmwareUpdateStatus implements [bmc.FirmwareUpdater]. A ref the BMC
// never issued reads bmc.FirmwareTaskGone.
func (d *Driver) FirmwareUpdateStatus(ctx context.Context, ref bmc.FirmwareTaskRef) (bmc.FirmwareTaskStatus, error) {
	var st bmc.FirmwareTaskStatus
	err := d.do(ctx, MethodFirmwareUpdateStatus, []any{ref.String()}, func() error {
		b := d.bmc
		if err := b.lacksFirmware(); err != nil {
			return err
		}
		if ref.IsZero() {
			return bmc.Permanent(errors.New("the task ref names no task"))
		}
		b.settleFirmware()
		id, _ := strconv.Atoi(ref.TaskID)
		if id < 1 || id > len(b.fw.tasks) {
			st = bmc.FirmwareTaskStatus{State: bmc.FirmwareTaskGone, Percent: -1}
			return nil
		}
		st = b.fwStatus(b.fw.tasks[id-1])
		return nil
	})
	return st, err
}

// FirmwareVersion implements [bmc.FirmwareUpdater].
func (d *Driver) FirmwareVersion(ctx context.Context, component string) (string, error) {
	var v string
	err := d.do(ctx, MethodFirmwareVersion, []any{component}, func() error {
		b := d.bmc
		if err := b.lacksFirmware(); err != nil {
			return err
		}
		b.settleFirmware()
		var ok bool
		if v, ok = b.fw.versions[component]; !ok {
			return bmc.Permanent(fmt.Errorf("no firmware component %q (there are: %v)", component, slices.Sorted(maps.Keys(b.fw.versions))))
		}
		return nil
	})
	return v, err
}

var _ bmc.FirmwareTaskLister = (*Driver)(nil)

// ListsFirmwareTasks implements [bmc.FirmwareTaskLister]: true unless
// FirmwareOptions.NoTasks. It makes no call of its own (it is what the
// fake's configuration says, not something read from a BMC).
func (d *Driver) ListsFirmwareTasks(context.Context) (bool, error) {
	if err := d.bmc.lacksFirmware(); err != nil {
		return false, err
	}
	return !d.bmc.opts.Firmware.NoTasks, nil
}
