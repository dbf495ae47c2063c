// Package task defines one step of a job: a one-of [Spec] (power, boot
// device, virtual media, wait for boot) with strict decoding and validation,
// and the [Status] the runner records for it.
//
// Spec and Status are plain JSON-tagged structs with no interface fields, so
// they embed in a host's CRD types.
package task
