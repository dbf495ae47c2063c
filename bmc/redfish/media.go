package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// findMedia returns the URI of the virtual media device serving kind: under
// the system (newer BMCs) or under its managers (most BMCs). The URI is
// remembered for the connection.
func (d *Driver) findMedia(ctx context.Context, kind bmc.MediaKind) (string, error) {
	if _, ok := mediaTypes[kind]; !ok {
		return "", bmc.Permanent(fmt.Errorf("media kind %q: want cd or usb", kind))
	}
	if uri, ok := d.mediaURIs[string(kind)]; ok {
		return uri, nil
	}
	var collections []string
	if d.sys.VirtualMediaURI != "" {
		collections = append(collections, d.sys.VirtualMediaURI)
	}
	managers := d.sys.ManagedBy
	if len(managers) == 0 {
		var err error
		if managers, err = d.collection(ctx, d.s.managersURI()); err != nil {
			return "", fmt.Errorf("list managers: %w", err)
		}
	}
	for _, m := range managers {
		var mgr struct{ VirtualMedia schemas.Link }
		if _, err := d.getJSON(ctx, m, &mgr); err != nil {
			return "", fmt.Errorf("read manager %s: %w", m, err)
		}
		if mgr.VirtualMedia != "" {
			collections = append(collections, string(mgr.VirtualMedia))
		}
	}
	for _, c := range collections {
		members, err := d.collection(ctx, c)
		if err != nil {
			return "", fmt.Errorf("list virtual media %s: %w", c, err)
		}
		for _, m := range members {
			var vm schemas.VirtualMedia
			if _, err := d.getJSON(ctx, m, &vm); err != nil {
				return "", fmt.Errorf("read virtual media %s: %w", m, err)
			}
			if mediaMatches(kind, &vm) {
				d.mediaURIs[string(kind)] = m
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("no %s virtual media device under the system or its managers: %w", kind, bmc.ErrNotSupported)
}

func (d *Driver) readMedia(ctx context.Context, uri string) (*schemas.VirtualMedia, error) {
	var vm schemas.VirtualMedia
	err := d.do(ctx, true, func(c *gofish.APIClient) error {
		got, err := schemas.GetObject[schemas.VirtualMedia](c, uri)
		if err != nil {
			return err
		}
		vm = *got
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &vm, nil
}

// mediaStatus maps a VirtualMedia. An Image of "None" (AMI MegaRAC's
// empty media) reads as no image.
func mediaStatus(vm *schemas.VirtualMedia) bmc.MediaStatus {
	image := vm.Image
	if strings.EqualFold(image, "None") {
		image = ""
	}
	inserted := image != ""
	if vm.Inserted != nil {
		inserted = *vm.Inserted
	}
	return bmc.MediaStatus{Inserted: inserted, Image: image}
}

// InsertMedia ejects whatever is inserted (unless it is already imageURL),
// inserts imageURL, and reads the device back.
func (d *Driver) InsertMedia(ctx context.Context, kind bmc.MediaKind, imageURL string) error {
	op := fmt.Sprintf("insert %s media", kind)
	if u, err := url.Parse(imageURL); err != nil || u.Scheme == "" || u.Host == "" {
		return d.opErr(op, bmc.Permanent(fmt.Errorf("image URL %q: want an absolute http(s) or nfs URL", imageURL)))
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.insertMedia(ctx, kind, imageURL); err != nil {
		return d.opErr(op, err)
	}
	return nil
}

func (d *Driver) insertMedia(ctx context.Context, kind bmc.MediaKind, imageURL string) error {
	uri, err := d.findMedia(ctx, kind)
	if err != nil {
		return err
	}
	vm, err := d.readMedia(ctx, uri)
	if err != nil {
		return err
	}
	st := mediaStatus(vm)
	if st.Inserted && st.Image == imageURL {
		return nil
	}
	if st.Inserted {
		if err := d.eject(ctx, uri, vm); err != nil {
			return fmt.Errorf("eject %s before insert: %w", st.Image, err)
		}
	}
	if err := d.insert(ctx, uri, vm, imageURL); err != nil {
		return err
	}
	vm, err = d.readMedia(ctx, uri)
	if err != nil {
		return fmt.Errorf("read back media: %w", err)
	}
	if st := mediaStatus(vm); !st.Inserted || st.Image != imageURL {
		return fmt.Errorf("the BMC accepted the insert but reads back inserted=%t image=%q", st.Inserted, st.Image)
	}
	return nil
}

// insert sends InsertMedia; a device that offers no such action (older
// Lenovo XCC) gets a PATCH of its Image and Inserted instead.
func (d *Driver) insert(ctx context.Context, uri string, vm *schemas.VirtualMedia, imageURL string) error {
	if !vm.SupportsMediaInsert {
		return d.mediaPatch(ctx, uri, "InsertMedia", map[string]any{"Image": imageURL, "Inserted": true, "WriteProtected": true})
	}
	params := &schemas.VirtualMediaInsertMediaParameters{Image: imageURL, Inserted: gofish.ToRef(true), WriteProtected: gofish.ToRef(true)}
	return d.mediaAction(ctx, func() error { _, err := vm.InsertMedia(params); return err }, vm)
}

// eject sends EjectMedia; a device that offers no such action (older
// Lenovo XCC) gets a PATCH of Image null and Inserted false instead.
func (d *Driver) eject(ctx context.Context, uri string, vm *schemas.VirtualMedia) error {
	if !vm.SupportsMediaEject {
		return d.mediaPatch(ctx, uri, "EjectMedia", map[string]any{"Image": nil, "Inserted": false})
	}
	return d.mediaAction(ctx, func() error { _, err := vm.EjectMedia(); return err }, vm)
}

// mediaPatch PATCHes a device that offers no action, without If-Match.
// A BMC that refuses the PATCH too (405, 501, 400 not supported) has no
// way to change this device: the error wraps bmc.ErrNotSupported.
func (d *Driver) mediaPatch(ctx context.Context, uri, action string, body map[string]any) error {
	err := d.patch(ctx, uri, body, "")
	var se *StatusError
	if errors.As(err, &se) && se.refused() {
		return fmt.Errorf("the virtual media %s offers no VirtualMedia.%s action and refused a PATCH of its Image (%w): %w", uri, action, se, bmc.ErrNotSupported)
	}
	return err
}

// mediaAction runs a gofish VirtualMedia action with the per-call client,
// without If-Match: gofish echoes the device's ETag on action POSTs, which
// iDRAC answers 412 (actions have no ETag semantics).
func (d *Driver) mediaAction(ctx context.Context, fn func() error, vm *schemas.VirtualMedia) error {
	vm.DisableEtagMatch(true)
	return d.do(ctx, false, func(c *gofish.APIClient) error {
		vm.SetClient(c)
		return fn()
	})
}

// EjectMedia ejects the device's media; an empty device is left alone.
func (d *Driver) EjectMedia(ctx context.Context, kind bmc.MediaKind) error {
	op := fmt.Sprintf("eject %s media", kind)
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.ejectMedia(ctx, kind); err != nil {
		return d.opErr(op, err)
	}
	return nil
}

func (d *Driver) ejectMedia(ctx context.Context, kind bmc.MediaKind) error {
	uri, err := d.findMedia(ctx, kind)
	if err != nil {
		return err
	}
	vm, err := d.readMedia(ctx, uri)
	if err != nil {
		return err
	}
	if !mediaStatus(vm).Inserted {
		return nil
	}
	if err := d.eject(ctx, uri, vm); err != nil {
		return err
	}
	vm, err = d.readMedia(ctx, uri)
	if err != nil {
		return fmt.Errorf("read back media: %w", err)
	}
	if mediaStatus(vm).Inserted {
		return fmt.Errorf("the BMC accepted the eject but still reads back image %q inserted", vm.Image)
	}
	return nil
}

// MediaStatus reads the device back.
func (d *Driver) MediaStatus(ctx context.Context, kind bmc.MediaKind) (bmc.MediaStatus, error) {
	op := fmt.Sprintf("read %s media", kind)
	done, err := d.begin()
	if err != nil {
		return bmc.MediaStatus{}, d.opErr(op, err)
	}
	defer done()
	uri, err := d.findMedia(ctx, kind)
	if err != nil {
		return bmc.MediaStatus{}, d.opErr(op, err)
	}
	vm, err := d.readMedia(ctx, uri)
	if err != nil {
		return bmc.MediaStatus{}, d.opErr(op, err)
	}
	return mediaStatus(vm), nil
}

// ResetBMC restarts the BMC itself (warm: GracefulRestart, cold:
// ForceRestart). The session dies with it: the next call logs in again
// (failing transiently while the BMC restarts), and Close does not log out.
func (d *Driver) ResetBMC(ctx context.Context, t bmc.BMCResetType) error {
	op := fmt.Sprintf("reset BMC (%s)", t)
	if _, err := resetTypeOf(t); err != nil {
		return d.opErr(op, err)
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	target, rt, err := d.managerReset(ctx, t)
	if err != nil {
		return d.opErr(op, err)
	}
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(target, map[string]string{"ResetType": rt})
		drain(resp)
		return err
	})
	if err != nil {
		return d.opErr(op, err)
	}
	d.s.forget()
	return nil
}

// resetTypeOf is the Manager.Reset ResetType of a BMC reset type.
func resetTypeOf(t bmc.BMCResetType) (string, error) {
	switch t {
	case bmc.BMCResetWarm:
		return "GracefulRestart", nil
	case bmc.BMCResetCold:
		return "ForceRestart", nil
	}
	return "", bmc.Permanent(fmt.Errorf("BMC reset type %q: want warm or cold", t))
}

// managerReset is the Manager.Reset target and ResetType for t, once the
// system's manager shows it offers them (reads only).
func (d *Driver) managerReset(ctx context.Context, t bmc.BMCResetType) (target, rt string, err error) {
	if rt, err = resetTypeOf(t); err != nil {
		return "", "", err
	}
	mgr, err := d.manager(ctx)
	if err != nil {
		return "", "", err
	}
	target = mgr.Actions.Reset.Target
	if target == "" {
		return "", "", fmt.Errorf("manager %s offers no Manager.Reset: %w", mgr.uri, bmc.ErrNotSupported)
	}
	allowed, err := d.allowedValues(ctx, mgr.Actions.Reset.Allowed, mgr.Actions.Reset.ActionInfoTarget, "ResetType")
	if err != nil {
		return "", "", err
	}
	if allowed != nil && !slices.Contains(allowed, rt) {
		return "", "", fmt.Errorf("manager %s does not offer ResetType %s (advertised: %s): %w", mgr.uri, rt, list(allowed), bmc.ErrNotSupported)
	}
	return target, rt, nil
}
