package bmcevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// Kind is how a BMC's events reach the Store.
type Kind string

// The kinds of [Source], in the order [Source.Run] tries them.
const (
	// KindPush: the BMC pushes to a subscription's destination, the
	// host's [Receiver] ([Manager.Ensure] keeps the subscription).
	KindPush Kind = "push"
	// KindSSE: the host reads the BMC's Server-Sent Events stream
	// ([Source.Stream], bmc.EventStreamer).
	KindSSE Kind = "sse"
	// KindPoll: the host reads what is new in the BMC's logs
	// ([Source.Poll], bmc.EventLogReader).
	KindPoll Kind = "poll"
)

// Observer is told what the Receiver and the Sources do, for metrics
// (contrib/prometheus: Metrics.EventObserver). Every field is optional;
// callbacks run on the caller's goroutine after the write they report and
// must not block.
type Observer struct {
	// Stored: an event was stored (ev.Via says how it came).
	Stored func(ev Event)
	// Duplicate: a record of source that came by via was already stored
	// (a BMC's retry, the streamed copy of a pushed event, an entry a
	// poll read again) and was dropped.
	Duplicate func(source string, via Kind)
	// Refused: the Receiver answered a push with status (4xx, or 503
	// when the store failed).
	Refused func(status int)
}

// storePayload stores every record of p, pushed or streamed by source,
// with Create under [EventKey]: a record already there (ErrExists) was
// stored by an earlier copy and is dropped. It stops at the first store
// error; the records before it stay stored.
func storePayload(ctx context.Context, s storage.Store, obs Observer, source string, via Kind, p Payload, now time.Time) (Response, error) {
	var resp Response
	for i, rec := range p.Records {
		ev := Event{
			Source: source, ID: rec.EventID, Type: rec.EventType, Severity: bmc.ParseSeverity(rec.Severity),
			Message: rec.Message, MessageID: rec.MessageID, Origin: rec.Origin, System: systemOf(rec.Origin),
			Time: rec.Time, Received: now.UTC(), Via: via,
		}
		stored, err := storeEvent(ctx, s, obs, EventKey(source, p, i), ev)
		if err != nil {
			return resp, err
		}
		if stored {
			resp.Stored++
		} else {
			resp.Duplicates++
		}
	}
	return resp, nil
}

// storeEvent creates ev under key; false when the key was taken (a
// duplicate, dropped).
func storeEvent(ctx context.Context, s storage.Store, obs Observer, key string, ev Event) (bool, error) {
	val, err := json.Marshal(ev)
	if err != nil {
		return false, err
	}
	switch _, err := s.Create(ctx, key, val); {
	case err == nil:
		if obs.Stored != nil {
			obs.Stored(ev)
		}
		return true, nil
	case errors.Is(err, storage.ErrExists):
		if obs.Duplicate != nil {
			obs.Duplicate(ev.Source, ev.Via)
		}
		return false, nil
	default:
		return false, fmt.Errorf("store BMC event %s: %w", key, err)
	}
}
