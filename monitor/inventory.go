package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// This file keeps each machine's hardware inventory current
// (Config.InventoryInterval; docs/monitor.md, "Inventory"): the refresh
// that finds it due reads it on the same claim and session as the power
// read, stores it beside the machine record, and writes the schedule on
// the record.

// DefaultInventoryInterval is Config.InventoryInterval's default: once a
// day (±Jitter), as Rufio does.
const DefaultInventoryInterval = 24 * time.Hour

// InventoryStatus is the inventory's schedule and last outcome, on the
// machine record (Status.Inventory). It is small: the inventory itself is
// a [MachineInventory] under its own key.
type InventoryStatus struct {
	// ReadTime is when the inventory was last read (zero if never), by
	// the reading replica's clock.
	ReadTime time.Time `json:"readTime,omitzero"`
	// Next is when the inventory is due again, by the clock of the
	// replica that set it. Unlike Refresh.Next, every replica compares it
	// with its own clock: skew between replicas (seconds) shifts a
	// daily read by as much, within its ±10% jitter.
	Next time.Time `json:"next,omitzero"`
	// ObservedGeneration is the machine's Generation when the inventory
	// was last tried: a change by Add makes it due at once.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Failures counts the failed reads since the last success; Error is
	// the last one's message ("" after a success).
	Failures int    `json:"failures,omitempty"`
	Error    string `json:"error,omitempty"`
}

// MachineInventory is a machine's hardware inventory as the monitor last
// read it, stored as JSON under <KeyPrefix>inventories/<escaped
// SystemKey> (see [Monitor.Inventory]).
type MachineInventory struct {
	// System and BMC are the machine's, as on its record.
	System string `json:"system"`
	BMC    string `json:"bmc"`
	// Generation is the machine's Generation when it was read.
	Generation int64 `json:"generation"`
	// ReadTime is when it was read, by the reading replica's clock.
	ReadTime time.Time `json:"readTime"`
	// Inventory is what the BMC reported (bounded: bmc.Inventory.Bound).
	Inventory bmc.Inventory `json:"inventory"`
}

// Inventory returns the hardware inventory last read of the machine at
// bmcURL. The error wraps storage.ErrNotFound when the machine is not
// monitored or its inventory was not read yet (Status.Inventory says why).
func (m *Monitor) Inventory(ctx context.Context, bmcURL string) (*MachineInventory, error) {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	rec, err := m.cfg.Store.Get(ctx, m.inventoryKey(ep.SystemKey()))
	if err != nil {
		return nil, fmt.Errorf("monitor: inventory of %s: %w", ep.Redacted(), err)
	}
	var inv MachineInventory
	if err := json.Unmarshal(rec.Value, &inv); err != nil {
		return nil, fmt.Errorf("monitor: decoding the inventory of %s: %w", ep.Redacted(), err)
	}
	return &inv, nil
}

// inventoryKey is the key of system's inventory.
func (m *Monitor) inventoryKey(system string) string {
	return m.cfg.KeyPrefix + "inventories/" + url.PathEscape(system)
}

func (m *Monitor) deleteInventory(ctx context.Context, system string) error {
	err := m.cfg.Store.Delete(ctx, m.inventoryKey(system), 0)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// inventoryDue says whether mc's inventory is to be read at now.
func (m *Monitor) inventoryDue(mc *Machine, now time.Time) bool {
	if m.cfg.InventoryInterval < 0 {
		return false
	}
	st := mc.Status.Inventory
	return st == nil || st.ObservedGeneration != mc.Generation || !now.Before(st.Next)
}

// refreshInventory reads the inventory (o.rec is the record with this
// refresh's result, under its claim), stores it under its own key, then
// the schedule on the record. A failure is recorded and retried after
// Interval, doubling up to InventoryInterval; it never touches Contactable.
func (m *Monitor) refreshInventory(ctx context.Context, j refreshJob, o outcome, creds bmc.Credentials) outcome {
	claimed := o.rec
	ictx, cancel := context.WithTimeout(ctx, m.cfg.InventoryTimeout)
	var inv bmc.Inventory
	err := m.withDriver(ctx, ictx, j.ep, creds, func(drv bmc.Driver) error {
		ir, ok := drv.(bmc.InventoryReader)
		if !ok {
			return fmt.Errorf("the driver %T cannot read an inventory: %w", drv, bmc.ErrNotSupported)
		}
		var err error
		inv, err = ir.Inventory(ictx)
		return err
	})
	cancel()
	if ctx.Err() != nil {
		return o // stopping: still due, read by the next refresh
	}
	m.invReads.Add(1)
	now := m.cfg.Clock.Now()
	st := InventoryStatus{ObservedGeneration: claimed.Generation}
	if prev := claimed.Status.Inventory; prev != nil {
		st.ReadTime, st.Failures = prev.ReadTime, prev.Failures
	}
	if err == nil {
		err = m.putInventory(ctx, MachineInventory{System: claimed.System, BMC: claimed.BMC, Generation: claimed.Generation, ReadTime: now.UTC(), Inventory: inv})
	}
	if err == nil {
		st.ReadTime, st.Failures, st.Next = now.UTC(), 0, now.Add(m.jitter(m.cfg.InventoryInterval)).UTC()
	} else {
		m.invFail.Add(1)
		st.Failures++
		st.Error = clip(scrub(err.Error(), creds.Password), 1024)
		st.Next = now.Add(m.inventoryRetry(st.Failures, err)).UTC()
		m.log.Info("reading a machine's inventory failed; will try again", "system", claimed.System, "failures", st.Failures, "next", st.Next, "error", st.Error)
	}
	o = m.commit(ctx, o, claimed, func(mc *Machine) { mc.Status.Inventory = &st })
	if o.kind == outcomeGone {
		// Removed while it was read: leave no inventory behind.
		if err := m.deleteInventory(ctx, claimed.System); err != nil {
			m.log.Error(err, "deleting a removed machine's inventory failed", "system", claimed.System)
		}
	}
	return o
}

// inventoryRetry is the wait after the failures-th failure in a row:
// Interval, doubling up to InventoryInterval (at once to InventoryInterval
// for a BMC that cannot report an inventory).
func (m *Monitor) inventoryRetry(failures int, err error) time.Duration {
	d := m.cfg.InventoryInterval
	if !errors.Is(err, bmc.ErrNotSupported) {
		r := m.cfg.Interval
		for i := 1; i < failures && r < d; i++ {
			r *= 2
		}
		d = min(d, r)
	}
	return m.jitter(d)
}

// putInventory stores inv under its key.
func (m *Monitor) putInventory(ctx context.Context, inv MachineInventory) error {
	data, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	_, err = storage.Modify(ctx, m.cfg.Store, m.inventoryKey(inv.System), func(*storage.Record) ([]byte, error) {
		return data, nil
	})
	if err != nil {
		return fmt.Errorf("storing the inventory: %w", err)
	}
	return nil
}
