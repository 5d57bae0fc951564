//go:build !unix

package batch

// filterWords returns n zeroed words for a key filter, on the Go heap
// where memory is not mapped by hand, and a release that does nothing.
func filterWords(n int) ([]uint64, func()) { return heapWords(n) }
