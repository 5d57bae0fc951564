//go:build unix

package batch

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// filterWords returns n zeroed words for a key filter, mapped outside the
// Go heap, and the function that unmaps them. The filter is the one part
// of an import's memory that grows with the file (a byte a row); on the
// heap the collector's pacing counted it twice (the heap grows to twice
// what is live before a collection), so that five million rows cost ten
// MiB of peak memory instead of five. Anonymous pages come zeroed, and
// only the pages a key touches are resident.
func filterWords(n int) ([]uint64, func()) {
	b, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return heapWords(n)
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), func() { _ = unix.Munmap(b) }
}
