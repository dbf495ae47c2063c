package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// SetBootOverride PATCHes the system's Boot with only the fields being set,
// then reads it back. bmc.BootDeviceUEFIHTTP sets BootSourceOverrideTarget
// UefiHttp and, with a URI, HttpBootUri; a BMC that does not list UefiHttp
// among the allowed targets, or whose Boot has no HttpBootUri, gets no
// PATCH: the error wraps bmc.ErrNotSupported. With If-Match from the last read when the driver has
// an ETag; a BMC that rejects If-Match (400/412) gets the PATCH again
// without it (and never again on this connection), one that requires it
// (428) gets a fresh ETag. When the read-back shows the BMC ignored or
// already reverted the override, the error wraps [ErrOverrideNotApplied].
func (d *Driver) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	op := fmt.Sprintf("set boot override %s", o.Device)
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.setBootOverride(ctx, o); err != nil {
		return d.opErr(op, err)
	}
	return nil
}

func (d *Driver) setBootOverride(ctx context.Context, o bmc.BootOverride) error {
	boot, err := bootPatch(o, d.sys.Boot)
	if err != nil {
		return err
	}
	body := struct{ Boot *schemas.Boot }{boot}
	etag := d.sys.etag
	if d.noIfMatch {
		etag = ""
	}
	rejected := false // the BMC answered 400 to a PATCH with If-Match
	for attempt := 0; ; attempt++ {
		err = d.patch(ctx, d.systemURI, body, etag)
		if err == nil {
			if rejected && etag == "" {
				d.noIfMatch = true // it worked without: never send it again
			}
			break
		}
		var se *StatusError
		if attempt >= 2 || !errors.As(err, &se) {
			return err
		}
		switch {
		case etag != "" && (se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusPreconditionFailed):
			// Rejected If-Match, or a stale ETag: try without.
			rejected = se.StatusCode == http.StatusBadRequest
			d.logger(ctx).V(1).Info("PATCH with If-Match refused; retrying without", "status", se.StatusCode)
			etag = ""
		case etag == "" && se.StatusCode == http.StatusPreconditionRequired:
			doc, rerr := d.readSystem(ctx)
			if rerr != nil {
				return rerr
			}
			d.noIfMatch = false
			etag = doc.etag
			if etag == "" {
				return fmt.Errorf("the BMC requires If-Match but sends no ETag: %w", err)
			}
		default:
			return err
		}
	}
	doc, err := d.readSystem(ctx)
	if err != nil {
		return fmt.Errorf("read back boot override: %w", err)
	}
	if got := bootOverride(doc.Boot); !overrideApplied(o, got) {
		d.logger(ctx).Info("BMC did not apply the boot override", "want", o, "got", got)
		return bmc.Permanent(fmt.Errorf("%w: asked for %s, read back device=%s persistent=%t mode=%q uri=%q (Target=%s Enabled=%s)",
			ErrOverrideNotApplied, describe(o), got.Device, got.Persistent, got.Mode, got.URI,
			doc.Boot.BootSourceOverrideTarget, doc.Boot.BootSourceOverrideEnabled))
	}
	return nil
}

func describe(o bmc.BootOverride) string {
	s := fmt.Sprintf("device=%s persistent=%t mode=%q", o.Device, o.Persistent, o.Mode)
	if o.URI != "" {
		s += fmt.Sprintf(" uri=%q", o.URI)
	}
	return s
}

// patch sends one PATCH, with If-Match when etag is set. Not retried on
// transient errors (the job runner retries the task, which re-reads).
func (d *Driver) patch(ctx context.Context, uri string, body any, etag string) error {
	var headers map[string]string
	if etag != "" {
		headers = map[string]string{"If-Match": etag}
	}
	return d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.PatchWithHeaders(uri, body, headers)
		drain(resp)
		return err
	})
}

// BootOverride reads the boot override back: one GET of the system.
func (d *Driver) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	done, err := d.begin()
	if err != nil {
		return bmc.BootOverride{}, d.opErr("read boot override", err)
	}
	defer done()
	doc, err := d.readSystem(ctx)
	if err != nil {
		return bmc.BootOverride{}, d.opErr("read boot override", err)
	}
	return bootOverride(doc.Boot), nil
}
