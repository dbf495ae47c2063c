package redfish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish"

	"github.com/bmckit/bmckit/bmc"
)

// readSystem is the one GET of the system resource every status check costs.
func (d *Driver) readSystem(ctx context.Context) (systemDoc, error) {
	doc, err := d.fetchSystem(ctx, d.systemURI)
	if err != nil {
		return doc, err
	}
	d.sys = doc
	if d.resetTypes == nil && doc.ResetAllowed != nil {
		d.resetTypes = doc.ResetAllowed
	}
	return doc, nil
}

func (d *Driver) fetchSystem(ctx context.Context, uri string) (systemDoc, error) {
	var doc systemDoc
	err := d.do(ctx, true, func(c *gofish.APIClient) error {
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
		return nil
	})
	return doc, err
}

// selectSystem picks the system named by the endpoint path (by Id, or by
// UUID when no system has that Id), or the only one.
func (d *Driver) selectSystem(ctx context.Context) error {
	if d.ep.Path != "" {
		doc, err := d.fetchSystem(ctx, d.ep.Path)
		if err == nil {
			d.systemURI = d.ep.Path
			d.adopt(doc)
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
		for _, m := range members {
			doc, err := d.fetchSystem(ctx, m)
			if err != nil {
				return err
			}
			if strings.EqualFold(doc.UUID, want) {
				d.systemURI = m
				d.adopt(doc)
				return nil
			}
		}
		return bmc.Permanent(fmt.Errorf("no system %q (by Id or UUID) on this BMC; it has: %s", want, strings.Join(members, ", ")))
	}
	members, err := d.collection(ctx, d.systemsURI())
	if err != nil {
		return err
	}
	switch len(members) {
	case 0:
		return bmc.Permanent(errors.New("the BMC lists no systems"))
	case 1:
		doc, err := d.fetchSystem(ctx, members[0])
		if err != nil {
			return err
		}
		d.systemURI = members[0]
		d.adopt(doc)
		return nil
	}
	return bmc.Permanent(fmt.Errorf("the BMC manages %d systems (%s): name one in the address, e.g. %s%s",
		len(members), strings.Join(members, ", "), d.ep.String(), members[0]))
}

func (d *Driver) adopt(doc systemDoc) {
	d.sys = doc
	d.resetTypes = doc.ResetAllowed
}

func (d *Driver) systemsURI() string { return d.s.systemsURI() }

// PowerState reads the power state: one GET of the system resource.
func (d *Driver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	done, err := d.begin()
	if err != nil {
		return bmc.PowerUnknown, d.opErr("read power state", err)
	}
	defer done()
	doc, err := d.readSystem(ctx)
	if err != nil {
		return bmc.PowerUnknown, d.opErr("read power state", err)
	}
	return powerState(doc.PowerState), nil
}
