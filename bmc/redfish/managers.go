package redfish

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// managerDoc is what the driver reads from a Manager.
type managerDoc struct {
	uri         string
	ManagerType string
	LogServices schemas.Link // eventlog.go
	Links       struct{ ManagerForServers schemas.Links }
	Actions     struct {
		Reset struct {
			schemas.ActionTarget
			Allowed []string `json:"ResetType@Redfish.AllowableValues"`
		} `json:"#Manager.Reset"`
	}
}

// manager returns the manager of the driver's system, read once per
// connection:
//
//  1. the first of the system's Links.ManagedBy;
//  2. else the manager whose Links.ManagerForServers names the system;
//  3. else the only manager, or the first whose ManagerType is BMC.
//
// A service with no manager at all, or several of which none manages the
// system or is a BMC, fails with an error wrapping bmc.ErrNotSupported
// that names them.
func (d *Driver) manager(ctx context.Context) (*managerDoc, error) {
	if d.mgr != nil {
		return d.mgr, nil
	}
	read := func(uri string) (*managerDoc, error) {
		m := &managerDoc{uri: uri}
		if _, err := d.getJSON(ctx, uri, m); err != nil {
			return nil, fmt.Errorf("read manager %s: %w", uri, err)
		}
		return m, nil
	}
	if len(d.sys.ManagedBy) > 0 {
		m, err := read(d.sys.ManagedBy[0])
		if err != nil {
			return nil, err
		}
		d.mgr = m
		return m, nil
	}
	uris, err := d.collection(ctx, d.s.managersURI())
	if err != nil {
		return nil, fmt.Errorf("list managers: %w", err)
	}
	if len(uris) == 0 {
		return nil, fmt.Errorf("the BMC lists no manager: %w", bmc.ErrNotSupported)
	}
	var all []*managerDoc
	for _, u := range uris {
		m, err := read(u)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(m.Links.ManagerForServers.ToStrings(), func(s string) bool { return sameURI(s, d.systemURI) }) {
			d.mgr = m
			return m, nil
		}
		all = append(all, m)
	}
	if len(all) == 1 {
		d.mgr = all[0]
		return all[0], nil
	}
	for _, m := range all {
		if strings.EqualFold(m.ManagerType, "BMC") {
			d.mgr = m
			return m, nil
		}
	}
	return nil, fmt.Errorf("the system %s names no manager (Links.ManagedBy), no manager lists it in ManagerForServers, and none of %s is a BMC: %w",
		d.systemURI, strings.Join(uris, ", "), bmc.ErrNotSupported)
}

// sameURI compares two resource paths, ignoring a trailing slash.
func sameURI(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// allowedValues returns the values a BMC allows for an action's parameter:
// the inline ...@Redfish.AllowableValues when present, else those of the
// action's @Redfish.ActionInfo resource (one GET), else nil (not stated).
func (d *Driver) allowedValues(ctx context.Context, inline []string, actionInfo, param string) ([]string, error) {
	if inline != nil || actionInfo == "" {
		return inline, nil
	}
	var info schemas.ActionInfo
	if _, err := d.getJSON(ctx, actionInfo, &info); err != nil {
		return nil, fmt.Errorf("read ActionInfo %s: %w", actionInfo, err)
	}
	for _, p := range info.Parameters {
		if p.Name == param {
			return append([]string{}, p.AllowableValues...), nil
		}
	}
	return nil, nil
}
