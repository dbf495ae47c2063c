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
	got, doc, err := d.setBootOverride(ctx, o)
	if err != nil {
		return d.opErr(op, err)
	}
	if !overrideApplied(o, got) {
		d.logger(ctx).Info("BMC did not apply the boot override", "want", o, "got", got)
		return d.opErr(op, bmc.Permanent(fmt.Errorf("%w: asked for %s, read back device=%s persistent=%t mode=%q uri=%q (Target=%s Enabled=%s)",
			ErrOverrideNotApplied, describe(o), got.Device, got.Persistent, got.Mode, got.URI,
			doc.Boot.BootSourceOverrideTarget, doc.Boot.BootSourceOverrideEnabled)))
	}
	return nil
}

// SetBootOverrideReadBack is SetBootOverride that leaves the judgement to
// the caller: it PATCHes the override, reads the system back (one GET) and
// returns the override the BMC reports, applied or not, with an error only
// when a request failed. Package job uses it (by type assertion) so that
// the task's verification is this read, not a second GET, and so that an
// ignored or reverted override is re-set and then reported as
// VerificationFailed instead of failing at once.
func (d *Driver) SetBootOverrideReadBack(ctx context.Context, o bmc.BootOverride) (bmc.BootOverride, error) {
	op := fmt.Sprintf("set boot override %s", o.Device)
	done, err := d.begin()
	if err != nil {
		return bmc.BootOverride{}, d.opErr(op, err)
	}
	defer done()
	got, _, err := d.setBootOverride(ctx, o)
	if err != nil {
		return bmc.BootOverride{}, d.opErr(op, err)
	}
	return got, nil
}

// setBootOverride PATCHes o and reads the system back; it returns the
// override read back, and the document it came from.
func (d *Driver) setBootOverride(ctx context.Context, o bmc.BootOverride) (bmc.BootOverride, systemDoc, error) {
	boot, err := bootPatch(o, d.sys)
	if err != nil {
		return bmc.BootOverride{}, systemDoc{}, err
	}
	if err := d.patchSystem(ctx, struct{ Boot *schemas.Boot }{boot}); err != nil {
		return bmc.BootOverride{}, systemDoc{}, err
	}
	doc, err := d.readSystem(ctx)
	if err != nil {
		return bmc.BootOverride{}, systemDoc{}, fmt.Errorf("read back boot override: %w", err)
	}
	return bootOverride(doc.Boot), doc, nil
}

// patchSystem PATCHes the system resource with body, with If-Match from
// the last read when the driver has an ETag; a BMC that rejects If-Match
// (400/412) gets the PATCH again without it (and never again on this
// connection), one that requires it (428) gets a fresh ETag. The boot
// override and the boot order (bootorder.go) send through it.
func (d *Driver) patchSystem(ctx context.Context, body any) error {
	etag := d.sys.etag
	if d.noIfMatch {
		etag = ""
	}
	rejected := false // the BMC answered 400 to a PATCH with If-Match
	for attempt := 0; ; attempt++ {
		err := d.patch(ctx, d.systemURI, body, etag)
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

// BootOverride reads the boot override back: one GET of the system, or
// none when ctx's [bmc.ReadScope] holds a read of the system with no action
// sent since (the read-back of SetBootOverride, a status check, Dial's
// read, made moments before in the same job step).
func (d *Driver) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	done, err := d.begin()
	if err != nil {
		return bmc.BootOverride{}, d.opErr("read boot override", err)
	}
	defer done()
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return bmc.BootOverride{}, d.opErr("read boot override", err)
	}
	if !doc.hasOverride() {
		return bmc.BootOverride{}, d.opErr("read boot override", doc.errNoOverride())
	}
	return bootOverride(doc.Boot), nil
}
