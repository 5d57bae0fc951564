//go:build race

package rows

// raceEnabled reports whether the tests run with -race.
const raceEnabled = true
