// Package rot is a fixture for doccheck's test: its docs have rotted on
// purpose, one way per line of TestFindsRot's want list.
//
// A block that compiles, with a name left to the reader (d) and an elision:
//
//	c := rot.Config{Base: rot.Base{Port: 623}, Name: "x"}
//	...
//	_ = rot.New(c, d)
//
// A block that does not:
//
//	c := rot.Config{Dialer: d}
//	_ = rot.New(c)
//
// Not Go, so not checked:
//
//	rot -spec FILE [-json]
//
// Links: [New] and [Config.Port] exist, [Missing] and [Config.Nope] do not;
// [NAME] is a placeholder. In the text: rot.Registry does not exist, while
// rot.Config.Port (promoted from Base), three rot.Configs, time.Duration
// and clk.Now (a variable) are fine. Options.Dialer does not exist either.
package rot

import "time"

// Base is embedded in Config.
type Base struct {
	// Port defaults to 623.
	Port int
}

// Config configures [New]; see also [sub.Helper] and [sub.Nope].
type Config struct {
	Base
	// Name is a name; Timeout is a [time.Duration], and [time.Forever]
	// is not.
	Name    string
	Timeout time.Duration
}

// Options are other options.
type Options struct {
	Retries int
}

// New returns c's name.
func New(c Config, d any) string { return c.Name }
