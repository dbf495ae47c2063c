package bmcevents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

// SourceConfig configures a [Source].
type SourceConfig struct {
	// Store holds the events and the poll cursors (the Receiver's Store).
	// Required.
	Store storage.Store
	// Manager keeps push subscriptions for [Source.Run]. Defaults to nil:
	// Run does not try push (the host runs no Receiver the BMCs reach).
	Manager *Manager
	// Interval is how often Run calls Manager.Ensure (push) or Poll
	// (poll), and how long it waits before it opens a stream the BMC
	// ended (SSE). Defaults to DefaultInterval (3 minutes, the monitor's).
	Interval time.Duration
	// Logs are the logs Poll reads. Defaults to every log LogServices
	// lists.
	Logs []bmc.LogRef
	// Backlog is how many of a log's newest entries the first Poll of a
	// BMC takes in (later polls take everything new). Defaults to
	// bmc.DefaultLogLimit (100); -1 takes none: events from then on.
	Backlog int
	// Clock stamps Event.Received and times Run. Defaults to the wall
	// clock.
	Clock clock.Clock
	// Logger is used when ctx carries none. Defaults to logr.Discard().
	Logger logr.Logger
	// Observer is told of every event stored and duplicate dropped.
	// Defaults to none.
	Observer Observer
}

// DefaultInterval is SourceConfig.Interval's default: the monitor's.
const DefaultInterval = 3 * time.Minute

// Source brings the events of BMCs that do not push (or whose host runs
// no Receiver) into the same records as pushed events: [Source.Stream]
// reads a BMC's SSE stream, [Source.Poll] what is new in its logs, and
// [Source.Run] picks the first way a BMC offers (push, SSE, poll) and
// keeps at it. Every event is stored under [Prefix] like a pushed one, so
// one [Follower] reads them all; a streamed copy of a pushed event lands
// on the pushed copy's key and is dropped. Safe for concurrent use, one
// call per BMC at a time for Poll (two concurrent Polls of one BMC store
// nothing twice, but may read the same entries).
type Source struct {
	cfg SourceConfig
}

// NewSource checks cfg and returns a Source; it starts nothing.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Store == nil {
		return nil, errors.New("bmcevents: SourceConfig.Store is required")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("bmcevents: SourceConfig.Interval %v: must not be negative", cfg.Interval)
	}
	if cfg.Backlog < -1 || cfg.Backlog > bmc.MaxLogScan {
		return nil, fmt.Errorf("bmcevents: SourceConfig.Backlog %d: want -1 to %d", cfg.Backlog, bmc.MaxLogScan)
	}
	for i, ref := range cfg.Logs {
		if err := ref.Validate(); err != nil {
			return nil, fmt.Errorf("bmcevents: SourceConfig.Logs[%d]: %w", i, err)
		}
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = bmc.DefaultLogLimit
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	return &Source{cfg: cfg}, nil
}

func (s *Source) logger(ctx context.Context) logr.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	return s.cfg.Logger
}

// Stream reads source's event stream from drv until it ends and stores
// each event's records (decoded by [DecodePayload], keyed by [EventKey])
// before the next event is read. It returns ctx's error when ctx ends, a
// store error (the event at hand is lost to the stream: SSE has no retry),
// or the driver's error when the stream ends or cannot be opened
// (bmc.ErrNotSupported: the BMC has none). An event that does not decode
// is skipped and logged at V(1): it cannot be sent again.
func (s *Source) Stream(ctx context.Context, drv bmc.EventStreamer, source string) error {
	if err := ValidateSource(source); err != nil {
		return err
	}
	log := s.logger(ctx).WithValues("source", source)
	return drv.StreamEvents(ctx, func(data []byte) error {
		p, err := DecodePayload(bytes.NewReader(data), 0)
		if err != nil {
			log.V(1).Info("BMC stream event skipped: not a Redfish Event", "error", err.Error())
			return nil
		}
		_, err = storePayload(ctx, s.cfg.Store, s.cfg.Observer, source, KindSSE, p, s.cfg.Clock.Now())
		return err
	})
}

// Run keeps source's events flowing into the Store until ctx ends, by
// the first way drv's BMC offers, in this order:
//
//   - KindPush, when SourceConfig.Manager is set and drv is a
//     bmc.EventSubscriber: Manager.Ensure now and every Interval (events
//     arrive at the host's Receiver);
//   - KindSSE, when drv is a bmc.EventStreamer: Stream, opened again
//     Interval after the BMC ends it;
//   - KindPoll, when drv is a bmc.EventLogReader: Poll now and every
//     Interval.
//
// A way that fails with bmc.ErrNotSupported is dropped for the next one
// (kind reports the change); other failures are logged and tried again
// Interval later. Run returns ctx's error, or an error wrapping
// bmc.ErrNotSupported when the BMC offers no way. The driver is the
// caller's: Run does not close it.
func (s *Source) Run(ctx context.Context, drv bmc.Driver, source string, kind func(Kind)) error {
	if err := ValidateSource(source); err != nil {
		return err
	}
	log := s.logger(ctx).WithValues("source", source)
	ways := s.ways(drv, source)
	for len(ways) > 0 {
		w := ways[0]
		if kind != nil {
			kind(w.kind)
		}
		err := w.run(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, bmc.ErrNotSupported) {
			log.V(1).Info("BMC events: the BMC does not offer this way; trying the next", "kind", w.kind, "error", err.Error())
			ways = ways[1:]
			continue
		}
		log.Info("BMC events: failed; trying again", "kind", w.kind, "in", s.cfg.Interval, "error", err.Error())
		if err := s.wait(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("bmcevents: BMC %s offers no way to read its events (push, SSE, logs): %w", source, bmc.ErrNotSupported)
}

// way is one kind of Source.Run: run returns when it fails or ctx ends.
type way struct {
	kind Kind
	run  func(ctx context.Context) error
}

func (s *Source) ways(drv bmc.Driver, source string) []way {
	var ways []way
	if _, ok := drv.(bmc.EventSubscriber); ok && s.cfg.Manager != nil {
		ways = append(ways, way{KindPush, func(ctx context.Context) error {
			return s.every(ctx, func() error {
				_, err := s.cfg.Manager.Ensure(ctx, drv, source)
				return err
			})
		}})
	}
	if st, ok := drv.(bmc.EventStreamer); ok {
		ways = append(ways, way{KindSSE, func(ctx context.Context) error { return s.Stream(ctx, st, source) }})
	}
	if lr, ok := drv.(bmc.EventLogReader); ok {
		ways = append(ways, way{KindPoll, func(ctx context.Context) error {
			return s.every(ctx, func() error {
				_, err := s.Poll(ctx, lr, source)
				return err
			})
		}})
	}
	return ways
}

// every calls fn now and every Interval until it fails or ctx ends.
func (s *Source) every(ctx context.Context, fn func() error) error {
	for {
		if err := fn(); err != nil {
			return err
		}
		if err := s.wait(ctx); err != nil {
			return err
		}
	}
}

func (s *Source) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.cfg.Clock.After(s.cfg.Interval):
		return nil
	}
}
