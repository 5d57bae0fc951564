//go:build race

package xlsxfile

// raceEnabled reports whether the tests run with -race.
const raceEnabled = true
