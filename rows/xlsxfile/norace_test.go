//go:build !race

package xlsxfile

const raceEnabled = false
