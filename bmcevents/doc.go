// Package bmcevents receives the events BMCs push (Redfish EventService
// subscriptions) and keeps each BMC subscribed, with the same rigour as
// package bootstate: every event durable in the Store before the BMC gets
// its 2xx, nothing stored twice, nothing stored from a push that was
// refused.
//
// # Receiving
//
// A [Receiver] is an http.Handler mounted under a prefix of the host's
// server. Each BMC (a "source", the host's name for it) pushes to its own
// destination, <prefix>/<source>/<token> ([Destination]), where the token
// is an HMAC of the source under the receiver's secret: derived, never
// stored, compared in constant time, never logged. A push is decoded by
// [DecodePayload] (bounded, fuzzed) and each of its records is created
// under its own key ([EventKey]); a record already there is a retry of an
// earlier push and is dropped. Only then does the BMC get its 200.
//
//	rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: secret})
//	mux.Handle("POST /bmc-events/", rcv)
//
// # Reading
//
// Events are plain JSON [Event] records under [Prefix]. A [Follower]
// reports them in the order they were stored, from any Store; the host
// raises conditions and metrics on [Event.Critical] ones.
//
// # Subscribing
//
// A [Manager] keeps exactly one subscription per BMC for its owner: call
// [Manager.Ensure] at the monitor's interval with a driver that
// implements bmc.EventSubscriber (the Redfish driver does) and
// [Manager.Release] when the machine leaves. It keeps no state of its own:
// restarts and crashes converge on the next call.
//
// # One stream
//
// BMCs that do not push still fill the same records: a [Source] reads a
// BMC's Server-Sent Events stream ([Source.Stream], bmc.EventStreamer)
// into the keys a push would use, so a pushed and a streamed copy of one
// event are one record, or polls its logs ([Source.Poll],
// bmc.EventLogReader) with a durable cursor per BMC. [Source.Run] picks
// push, SSE or polling per BMC by what it offers. [Critical] groups a
// batch's Critical events per BMC for a condition; an [Observer] feeds
// metrics.
//
// docs/health-events.md ("Pushed events") gives the key layout, the
// guarantees at each crash point and the alternatives rejected.
package bmcevents
