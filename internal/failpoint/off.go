//go:build !chaos

package failpoint

// Hit does nothing: failpoints are compiled in with -tags chaos only.
func Hit(string) {}

// Enabled reports whether failpoints are compiled in.
const Enabled = false
