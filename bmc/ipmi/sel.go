package ipmi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.EventLogReader  = (*Driver)(nil)
	_ bmc.EventLogClearer = (*Driver)(nil)
)

// selRef names the one log an IPMI BMC keeps.
var selRef = bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}

// Completion codes of the SEL commands (IPMI v2.0 section 31).
const (
	ccSELEraseInProgress types.CompletionCode = 0x81 // Get SEL Entry, Add SEL Entry, Clear SEL...
)

// Bounds of ClearLog: how often a cancelled reservation is taken again,
// and how the erase is followed (about 30 s in all).
const (
	clearAttempts    = 3
	erasePolls       = 60
	erasePollFirst   = 20 * time.Millisecond
	erasePollLongest = 500 * time.Millisecond
)

// LogServices implements [bmc.EventLogReader]: the SEL, read with one Get
// SEL Info request (its capacity is MaxEntries). A BMC without a SEL
// device fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) LogServices(ctx context.Context) ([]bmc.LogService, error) {
	var info selInfo
	err := d.do(ctx, "list event logs", func(ctx context.Context, c *client.Client) error {
		var err error
		info, err = d.selInfo(ctx, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return []bmc.LogService{{LogRef: selRef, Name: "System Event Log", EntryType: "SEL", Clearable: true, MaxEntries: info.capacity}}, nil
}

func (d *Driver) selInfo(ctx context.Context, c *client.Client) (selInfo, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &storage.GetSELInfoRequest{}, &raw); err != nil {
		return selInfo{}, fmt.Errorf("get SEL info: %w", err)
	}
	info, err := decodeSELInfo(raw.data)
	if err != nil {
		return selInfo{}, bmc.Permanent(err)
	}
	return info, nil
}

// checkRef refuses any log but system/SEL, before a request.
func checkRef(ref bmc.LogRef) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if ref != selRef {
		return bmc.Permanent(fmt.Errorf("no log %s on this BMC; it has: %s", bmc.QuoteBounded(ref.String()), selRef))
	}
	return nil
}

// LogEntries implements [bmc.EventLogReader] for the SEL: Get SEL Info,
// then Get SEL Entry from the first record, following each record's next
// record ID to FFFFh (one request per record: a SEL of n records costs
// n+1 requests per call, whatever the page), and [bmc.PageLog]. It keeps
// the last bmc.MaxLogScan records listed. Records are decoded as
// decodeSELRecord says: a system event's sensor, event and direction; an
// OEM record's bytes.
func (d *Driver) LogEntries(ctx context.Context, ref bmc.LogRef, q bmc.LogQuery) (bmc.LogPage, error) {
	op := "read event log " + ref.String()
	if err := q.Validate(); err != nil {
		return bmc.LogPage{}, &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	if err := checkRef(ref); err != nil {
		return bmc.LogPage{}, &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	var all []bmc.LogEntry
	truncated := false
	err := d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		var err error
		all, truncated, err = d.readSEL(ctx, c)
		return err
	})
	if err != nil {
		return bmc.LogPage{}, err
	}
	p, err := bmc.PageLog(all, q)
	if err != nil {
		return bmc.LogPage{}, &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	p.Truncated = truncated
	return p, nil
}

// readSEL reads every record, in the BMC's order (the oldest first).
func (d *Driver) readSEL(ctx context.Context, c *client.Client) ([]bmc.LogEntry, bool, error) {
	info, err := d.selInfo(ctx, c)
	if err != nil || info.entries == 0 {
		return nil, false, err
	}
	var all []bmc.LogEntry
	truncated := false
	seen := make(map[uint16]bool, info.entries)
	for id := selFirst; id != selLast; {
		if seen[id] {
			return nil, false, bmc.Permanent(fmt.Errorf("get SEL entry: the BMC names record %#04x as the next one a second time; its SEL is inconsistent", id))
		}
		seen[id] = true
		var raw rawResponse
		err := d.exchange(ctx, c, &storage.GetSELEntryRequest{RecordID: id, ReadBytes: 0xff}, &raw)
		if err != nil {
			switch completionCode(err) {
			case types.CodeRequestedDataNotPresent:
				if id == selFirst {
					return nil, false, nil // emptied since Get SEL Info
				}
				return nil, false, bmc.Transient(fmt.Errorf("get SEL entry %#04x: the record is gone (the SEL was cleared while it was read): %w", id, err))
			case ccSELEraseInProgress:
				return nil, false, bmc.Transient(fmt.Errorf("get SEL entry %#04x: the SEL is being erased: %w", id, err))
			}
			return nil, false, fmt.Errorf("get SEL entry %#04x: %w", id, err)
		}
		next, rec, err := decodeSELEntry(raw.data)
		if err != nil {
			return nil, false, bmc.Permanent(err)
		}
		all = append(all, decodeSELRecord(rec))
		if len(all) > 2*bmc.MaxLogScan {
			all = append(all[:0], all[len(all)-bmc.MaxLogScan:]...)
			truncated = true
		}
		id = next
	}
	if len(all) > bmc.MaxLogScan {
		all, truncated = all[len(all)-bmc.MaxLogScan:], true
	}
	return all, truncated, nil
}

// ClearLog implements [bmc.EventLogClearer] for the SEL: Reserve SEL, Clear
// SEL (initiate erase) with the reservation, then Clear SEL (get erasure
// status) until the BMC reports the erase completed: a few requests, and
// polls 20 ms apart at first, 500 ms at most, 60 in all (about 30 s;
// then a transient error). A reservation the BMC cancelled (an entry was
// logged in between: completion code C5h) is taken again, 3 times at
// most. Clearing an empty SEL succeeds.
func (d *Driver) ClearLog(ctx context.Context, ref bmc.LogRef) error {
	op := "clear event log " + ref.String()
	if err := checkRef(ref); err != nil {
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		var err error
		for attempt := 0; attempt < clearAttempts; attempt++ {
			if err = d.clearSEL(ctx, c); completionCode(err) != types.CodeReservationCanceled {
				return err
			}
		}
		return bmc.Transient(fmt.Errorf("the BMC cancelled the SEL reservation %d times in a row (events are being logged): %w", clearAttempts, err))
	})
}

// clearSEL is one attempt: reserve, initiate the erase, follow it.
func (d *Driver) clearSEL(ctx context.Context, c *client.Client) error {
	reserve := func() (uint16, error) {
		var raw rawResponse
		if err := d.exchange(ctx, c, &storage.ReserveSELRequest{}, &raw); err != nil {
			if errors.Is(err, bmc.ErrNotSupported) {
				return 0, nil // no reservations: Clear SEL takes 0000h (section 31.4)
			}
			return 0, fmt.Errorf("reserve SEL: %w", err)
		}
		id, err := decodeReservation(raw.data)
		if err != nil {
			return 0, bmc.Permanent(err)
		}
		return id, nil
	}
	erase := func(res uint16, status bool) (bool, error) {
		var raw rawResponse
		what := "clear SEL (initiate erase)"
		if status {
			what = "clear SEL (get erasure status)"
		}
		if err := d.exchange(ctx, c, &storage.ClearSELRequest{ReservationID: res, GetErasureStatusFlag: status}, &raw); err != nil {
			return false, fmt.Errorf("%s: %w", what, err)
		}
		done, err := decodeErasure(raw.data)
		if err != nil {
			return false, bmc.Permanent(err)
		}
		return done, nil
	}
	res, err := reserve()
	if err != nil {
		return err
	}
	done, err := erase(res, false)
	wait := erasePollFirst
	for polls := 0; err == nil && !done; polls++ {
		if polls == erasePolls {
			return bmc.Transient(fmt.Errorf("clear SEL: the BMC still reports the erase in progress after %d polls", erasePolls))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("clear SEL: waiting for the erase to complete: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, erasePollLongest)
		done, err = erase(res, true)
		if completionCode(err) == types.CodeReservationCanceled {
			// An event logged after the erase began cancels the
			// reservation; the erase goes on: ask with a new one.
			if res, err = reserve(); err == nil {
				done, err = erase(res, true)
			}
		}
	}
	return err
}

// completionCode is the IPMI completion code err carries, or CodeOK.
func completionCode(err error) types.CompletionCode {
	var re interface{ CompletionCode() types.CompletionCode }
	if err != nil && errors.As(err, &re) {
		return re.CompletionCode()
	}
	return types.CodeOK
}
