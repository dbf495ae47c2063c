// Package powerplan turns a requested [bmc.PowerAction] and the power state
// a driver just read into the one protocol request that carries it out, so
// every protocol driver implements the semantics fixed in package bmc the
// same way.
//
// # Semantics
//
// [Plan] encodes the rules documented on [bmc.PowerAction]: requesting the
// state the server is already in is a no-op ([StepNone]), and cycle or reset
// on a server that is off powers it on instead of failing. Drivers for
// protocols without transitional states (IPMI) pass only [bmc.PowerOn] or
// [bmc.PowerOff]; [bmc.PowerUnknown] sends the request as asked.
package powerplan
