package bmcevents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// CursorPrefix is where Poll keeps its cursors: one record per BMC,
// CursorPrefix + source, outside [Prefix] so a Follower never sees them.
const CursorPrefix = "bmcevents-cursors/"

// Cursors is the stored value of a BMC's poll cursors: plain JSON.
type Cursors struct {
	// Logs maps a log ("system/SEL") to the newest entry stored from it.
	Logs map[string]Cursor `json:"logs"`
}

// Cursor names the newest entry of a log that Poll stored.
type Cursor struct {
	// Key is the entry's event key ([LogEntryKey]): the entry is found
	// again by it, whatever its position in the log.
	Key string `json:"key"`
	// ID is the entry's ID in the log, for people reading the record.
	ID string `json:"id"`
	// Polled is when it was stored.
	Polled time.Time `json:"polled"`
}

// PollResult says what [Source.Poll] did.
type PollResult struct {
	// Stored counts the entries stored as events, Duplicates those found
	// already stored (read again after a crash between the store and the
	// cursor's write, or after a log was cleared).
	Stored, Duplicates int
	// Gaps lists the logs whose cursor entry was not found (the log was
	// cleared or wrapped past it, or more than bmc.MaxLogScan entries came
	// since): every entry read was stored, and events between may be lost.
	Gaps []bmc.LogRef
}

// pollPage is the first page size of a Poll; later pages double it to
// bmc.MaxLogLimit. Small, because most polls find their cursor in the
// first few entries and some BMCs (HPE iLO's linked IML entries) cost one
// request per entry read.
const pollPage = 16

// Poll reads what is new in source's logs since the last Poll (by any
// process: the cursor is in the Store) and stores each new entry as an
// [Event] under [LogEntryKey], oldest first, then moves the log's cursor
// to the newest. A crash between the two re-reads the entries next time
// and finds them stored (Duplicates): nothing is stored twice. The first
// Poll of a log takes in its newest SourceConfig.Backlog entries.
//
// Each log is read newest first from the top until the cursor's entry
// (found by its key, not its position, since SEL record IDs restart after
// a clear), in pages of 16 entries doubling to bmc.MaxLogLimit, at most
// bmc.MaxLogScan entries. Cost: one LogEntries call per log when fewer
// than 16 entries are new (Redfish: the collection read; IPMI: the whole
// SEL, n+1 requests), plus one LogServices call when SourceConfig.Logs is
// not set.
func (s *Source) Poll(ctx context.Context, drv bmc.EventLogReader, source string) (PollResult, error) {
	var res PollResult
	if err := ValidateSource(source); err != nil {
		return res, err
	}
	logs := s.cfg.Logs
	if len(logs) == 0 {
		ls, err := drv.LogServices(ctx)
		if err != nil {
			return res, err
		}
		for _, l := range ls {
			logs = append(logs, l.LogRef)
		}
	}
	ckey := CursorPrefix + source
	cur, err := readCursors(ctx, s.cfg.Store, ckey)
	if err != nil {
		return res, err
	}
	moved := map[string]Cursor{}
	for _, ref := range logs {
		c := cur.Logs[ref.String()]
		if c.Key == "" && s.cfg.Backlog < 0 {
			// Events from now on: the cursor starts at the newest entry,
			// which is not stored.
			p, err := drv.LogEntries(ctx, ref, bmc.LogQuery{Limit: 1})
			if err != nil {
				return res, err
			}
			if len(p.Entries) > 0 {
				e := p.Entries[0]
				moved[ref.String()] = Cursor{Key: LogEntryKey(source, ref, e), ID: e.ID, Polled: s.cfg.Clock.Now().UTC()}
			}
			continue
		}
		fresh, found, err := s.readNew(ctx, drv, source, ref, c)
		if err != nil {
			return res, err
		}
		if !found {
			res.Gaps = append(res.Gaps, ref)
		}
		now := s.cfg.Clock.Now().UTC()
		for i := len(fresh) - 1; i >= 0; i-- { // oldest first
			e := fresh[i]
			ev := Event{Source: source, ID: e.ID, Type: e.Type, Severity: e.Severity, Message: e.Message,
				MessageID: e.MessageID, Time: e.Created, Received: now, Via: KindPoll, Log: ref.String()}
			stored, err := storeEvent(ctx, s.cfg.Store, s.cfg.Observer, LogEntryKey(source, ref, e), ev)
			if err != nil {
				return res, err
			}
			if stored {
				res.Stored++
			} else {
				res.Duplicates++
			}
		}
		if len(fresh) > 0 {
			moved[ref.String()] = Cursor{Key: LogEntryKey(source, ref, fresh[0]), ID: fresh[0].ID, Polled: now}
		}
	}
	if len(moved) == 0 {
		return res, nil
	}
	_, err = storage.Modify(ctx, s.cfg.Store, ckey, func(r *storage.Record) ([]byte, error) {
		var c Cursors
		if r != nil {
			if err := json.Unmarshal(r.Value, &c); err != nil {
				return nil, fmt.Errorf("decode BMC event poll cursors %s: %w", ckey, err)
			}
		}
		if c.Logs == nil {
			c.Logs = map[string]Cursor{}
		}
		for k, v := range moved {
			c.Logs[k] = v
		}
		return json.Marshal(c)
	})
	if err != nil {
		return res, fmt.Errorf("store BMC event poll cursor %s (the entries are stored; the next poll finds them as duplicates): %w", ckey, err)
	}
	return res, nil
}

// readNew reads ref newest first until the entry cur names and returns
// the entries before it, newest first. found is false when cur names an
// entry that was not met (a gap); true when there is no cursor (first
// poll: at most Backlog entries).
func (s *Source) readNew(ctx context.Context, drv bmc.EventLogReader, source string, ref bmc.LogRef, cur Cursor) (fresh []bmc.LogEntry, found bool, err error) {
	first := cur.Key == ""
	q := bmc.LogQuery{Limit: pollPage}
	for restarted := false; ; {
		p, err := drv.LogEntries(ctx, ref, q)
		if errors.Is(err, bmc.ErrLogChanged) && !restarted {
			// The log was cleared or wrapped under the paging: once more
			// from the newest.
			restarted, fresh, q = true, nil, bmc.LogQuery{Limit: pollPage}
			continue
		}
		if err != nil {
			return nil, false, err
		}
		for _, e := range p.Entries {
			if !first && LogEntryKey(source, ref, e) == cur.Key {
				return fresh, true, nil
			}
			fresh = append(fresh, e)
			if first && len(fresh) >= s.cfg.Backlog {
				return fresh, true, nil
			}
		}
		if p.Next == "" || len(fresh) >= bmc.MaxLogScan {
			return fresh, first, nil
		}
		q = bmc.LogQuery{After: p.Next, Limit: min(q.Limit*2, bmc.MaxLogLimit)}
	}
}

func readCursors(ctx context.Context, s storage.Store, key string) (Cursors, error) {
	r, err := s.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return Cursors{}, nil
	}
	if err != nil {
		return Cursors{}, fmt.Errorf("read BMC event poll cursors %s: %w", key, err)
	}
	var c Cursors
	if err := json.Unmarshal(r.Value, &c); err != nil {
		return Cursors{}, fmt.Errorf("decode BMC event poll cursors %s: %w", key, err)
	}
	return c, nil
}

// LogEntryKey is the store key of log entry e of ref, polled from source:
// Prefix + source + "/log." + scope + "." + log ID + "." + entry ID (their
// safe characters, at most 48) + "-" + 16 hex digits of a SHA-256 over the
// log, the entry's ID, Created, MessageID and Message. The same entry
// read again gives the same key; an entry that reuses an ID after a clear
// (SEL record IDs restart at 1) gives another, as its time or text
// differs. Keys of log entries never equal keys of pushed events (whose
// names do not start with "log.", or whose hash differs).
func LogEntryKey(source string, ref bmc.LogRef, e bmc.LogEntry) string {
	h := sha256.New()
	created := ""
	if !e.Created.IsZero() {
		created = e.Created.UTC().Format(time.RFC3339Nano)
	}
	for _, s := range []string{"log", string(ref.Scope), ref.ID, e.ID, created, e.MessageID, e.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	name := safeName("log."+string(ref.Scope)+"."+ref.ID+"."+e.ID, 48)
	return Prefix + source + "/" + name + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}
