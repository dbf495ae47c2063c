// Package sub is the fixture's second package; rot.New and rot.Gone are
// named from here, and so are rot.Config.Nope and example.com/rot.Nope
// (example.com/rot.New exists).
package sub

// Helper helps.
func Helper() {}
