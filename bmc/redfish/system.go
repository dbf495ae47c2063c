package redfish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/bmckit/bmckit/bmc"
)

// readSystem is the one GET of the system resource every status check costs.
// A BMC that answers it with a redirect moves the driver to the system's
// canonical URI (see fetchSystem), so the next check is one request again.
func (d *Driver) readSystem(ctx context.Context) (systemDoc, error) {
	doc, canonical, err := d.fetchSystem(ctx, d.systemURI)
	if err != nil {
		return doc, err
	}
	d.moveTo(ctx, canonical)
	d.sys = doc
	d.readScope = bmc.ReadScopeFrom(ctx)
	if d.resetTypes == nil && doc.ResetAllowed != nil {
		d.resetTypes = doc.ResetAllowed
	}
	return doc, nil
}

// recentSystem is the system document of the last read when that read was
// made under ctx's bmc.ReadScope (a job's current step) and no action was
// sent since; otherwise it reads (readSystem). Only reads that prepare a
// call or report the boot override use it: PowerState, which callers poll
// for changes that land without an action, always reads.
func (d *Driver) recentSystem(ctx context.Context) (systemDoc, error) {
	if sc := bmc.ReadScopeFrom(ctx); sc != nil && sc == d.readScope {
		return d.sys, nil
	}
	return d.readSystem(ctx)
}

// moveTo adopts canonical as the system's URI when a read was redirected
// to it.
func (d *Driver) moveTo(ctx context.Context, canonical string) {
	if canonical == "" || canonical == d.systemURI {
		return
	}
	d.logger(ctx).V(1).Info("the BMC redirected the system to its canonical URI; using it from now on", "from", d.systemURI, "to", canonical)
	d.systemURI = canonical
}

// fetchSystem GETs a system document. When the BMC answered with a
// redirect (307/308 to the canonical URL of a system addressed by an alias),
// canonical is the system's @odata.id (else the URL the redirect led to),
// for the caller to adopt: following the redirect on every read would cost
// two requests per status check and per PATCH. Otherwise canonical is "".
func (d *Driver) fetchSystem(ctx context.Context, uri string) (doc systemDoc, canonical string, err error) {
	err = d.do(ctx, true, func(c *gofish.APIClient) error {
		resp, err := c.Get(uri)
		if err != nil {
			return err
		}
		defer drain(resp)
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if err != nil {
			return err
		}
		doc, err = parseSystem(body, resp.Header.Get("ETag"))
		if err != nil {
			return fmt.Errorf("GET %s: the BMC answered an invalid ComputerSystem: %w", uri, bmc.Permanent(err))
		}
		canonical = ""
		if resp.Request != nil && resp.Request.URL != nil {
			if final := resp.Request.URL.Path; strings.TrimSuffix(final, "/") != strings.TrimSuffix(pathOf(uri), "/") {
				canonical = final
				if id := pathOf(doc.ODataID); strings.HasPrefix(id, "/") {
					canonical = id
				}
			}
		}
		return nil
	})
	return doc, canonical, err
}

// selectSystem picks the system named by the endpoint path (by Id, or by
// UUID when no system has that Id), or the only one.
func (d *Driver) selectSystem(ctx context.Context) error {
	if d.ep.Path != "" {
		doc, canonical, err := d.fetchSystem(ctx, d.ep.Path)
		if err == nil {
			d.systemURI = d.ep.Path
			d.moveTo(ctx, canonical)
			d.adopt(ctx, doc)
			return nil
		}
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
			return err
		}
		// Not an Id: try it as a UUID.
		want := d.ep.SystemID()
		members, cerr := d.collection(ctx, d.systemsURI())
		if cerr != nil {
			return cerr
		}
		if len(members) == 0 {
			return d.noSystems(err)
		}
		var unread []string // members that failed transiently
		var lastErr error
		for _, m := range members {
			doc, _, err := d.fetchSystem(ctx, m)
			if err != nil {
				if !bmc.IsTransient(err) || ctx.Err() != nil {
					return err
				}
				// Another system may be unreadable for now (a DGX's HGX
				// baseboard answers 503 while the host is off): it need
				// not be the one wanted, so look at the others.
				unread, lastErr = append(unread, m), err
				continue
			}
			if strings.EqualFold(doc.UUID, want) {
				d.systemURI = m
				d.adopt(ctx, doc)
				return nil
			}
		}
		if len(unread) > 0 {
			return bmc.Transient(fmt.Errorf("no system with UUID %q among those that answered; %s could not be read (%w), and may be it", want, strings.Join(unread, ", "), lastErr))
		}
		return bmc.Permanent(fmt.Errorf("no system %q (by Id or UUID) on this BMC; it has: %s", want, strings.Join(members, ", ")))
	}
	members, err := d.collection(ctx, d.systemsURI())
	if err != nil {
		return err
	}
	switch len(members) {
	case 0:
		return d.noSystems(nil)
	case 1:
		doc, canonical, err := d.fetchSystem(ctx, members[0])
		if err != nil {
			return err
		}
		d.systemURI = members[0]
		d.moveTo(ctx, canonical)
		d.adopt(ctx, doc)
		return nil
	}
	return bmc.Permanent(fmt.Errorf("the BMC manages %d systems (%s): name one in the address, e.g. %s%s",
		len(members), strings.Join(members, ", "), d.ep.String(), members[0]))
}

// noSystems is the error of a service whose Systems collection is empty:
// a chassis or enclosure controller, which manages no computer system.
func (d *Driver) noSystems(cause error) error {
	err := fmt.Errorf("the Redfish service lists no computer systems (%s is empty): it manages none, as a chassis or enclosure controller does; address the BMC that manages the server", d.systemsURI())
	if cause != nil {
		err = fmt.Errorf("%w (reading %s: %w)", err, d.ep.Path, cause)
	}
	return bmc.Permanent(err)
}

func (d *Driver) adopt(ctx context.Context, doc systemDoc) {
	d.sys = doc
	d.readScope = bmc.ReadScopeFrom(ctx)
	d.resetTypes = doc.ResetAllowed
}

func (d *Driver) systemsURI() string { return d.s.systemsURI() }

// PowerState reads the power state: one GET of the system resource. A
// system whose document has no PowerState gives an error wrapping
// bmc.ErrNotSupported; one that reports it null, a transient error.
func (d *Driver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	done, err := d.begin()
	if err != nil {
		return bmc.PowerUnknown, d.opErr("read power state", err)
	}
	defer done()
	doc, err := d.readSystem(ctx)
	if err == nil {
		err = doc.errPowerState()
	}
	if err != nil {
		return bmc.PowerUnknown, d.opErr("read power state", err)
	}
	return powerState(doc.PowerState), nil
}

// LastResetTime implements [bmc.LastResetReader]: the system's
// LastResetTime (when it last came out of a reset or booted), in the BMC's
// clock. One GET of the system resource, or none when the driver read it in
// the same job step since its last action (bmc.ReadScope): a read made after
// the last action is as good as a new one. A system that does not report it
// (the property is missing or empty, as on many BMCs) gives an error wrapping
// [bmc.ErrNotSupported].
func (d *Driver) LastResetTime(ctx context.Context) (time.Time, error) {
	done, err := d.begin()
	if err != nil {
		return time.Time{}, d.opErr("read last reset time", err)
	}
	defer done()
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return time.Time{}, d.opErr("read last reset time", err)
	}
	v := strings.TrimSpace(doc.LastResetTime)
	if v == "" {
		return time.Time{}, d.opErr("read last reset time", fmt.Errorf("the system %s reports no LastResetTime: %w", d.systemURI, bmc.ErrNotSupported))
	}
	t, err := parseDateTime(v)
	if err != nil {
		return time.Time{}, d.opErr("read last reset time", bmc.Permanent(fmt.Errorf("the system's LastResetTime %q is not a date and time: %w", v, err)))
	}
	return t, nil
}

// parseDateTime parses a Redfish DateTimeOffset ("2026-12-02T10:20:30+00:00",
// with or without a fraction of a second), and tolerates a value without an
// offset (taken as UTC), which some BMCs send.
func parseDateTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err == nil {
		return t, nil
	}
	if t2, err2 := time.Parse("2006-01-02T15:04:05.999999999", v); err2 == nil {
		return t2, nil
	}
	return time.Time{}, err
}
