// Package task defines one step of a job: a one-of [Spec] (power, power
// status, reachable, boot device including UEFI HTTP boot, virtual media,
// BMC reset, wait for boot) with strict decoding and validation, and the
// [Status] the runner records for it.
//
// Spec and Status are plain JSON-tagged structs with no interface fields, so
// they embed in a host's CRD types.
package task
