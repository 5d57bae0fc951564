package batch

import (
	"encoding/binary"
	"sync"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// keyFilter is a Bloom filter over the natural-key digests of an import's
// valid rows, in file order. A row whose digest the filter has not seen
// cannot repeat an earlier row's key, so it may be worked while it is
// ingested; a row the filter may have seen (a true repeat, or a false
// alarm) is held back until the store's exact check, which looks only at
// those digests (driver.DuplicateKey.Screen), and the false alarms are
// worked after it, in the same transaction.
//
// Its size is fixed by the row count, 8 bits a row (1 MiB for a million
// rows, 5 MiB for five), where an exact set of digests takes about 50
// bytes a row: memory stays flat in the file's length. At 8 bits and 6
// probes about 4,000 keys in a million are false alarms (measured on
// generated keys), each a row read and written a second time; at 20 bits
// there were 4, for 2.5 times the memory. Its hashes are the digest's own
// bytes: a digest is already a uniform 128-bit hash, so its two halves
// give every probe by double hashing (Kirsch and Mitzenmacher) without
// hashing again. A blocked filter (every probe in one cache line) was
// measured too: 40% faster to add to, many more false alarms.
type keyFilter struct {
	bits    []uint64
	m       uint64 // bits in the filter
	release func()
}

// keyFilterBitsPerRow sizes the filter, and keyFilterProbes is how many
// of its bits a key sets (about 8 ln 2).
const (
	keyFilterBitsPerRow = 8
	keyFilterProbes     = 6
)

// newKeyFilter sizes a filter for about n keys; n may be an estimate (the
// first pass's row count), and more keys only raise the false positives.
// Its words are mapped outside the Go heap where the system allows
// (filterWords): free releases them, and nothing may use the filter after.
func newKeyFilter(n int64) *keyFilter {
	words := (max(n, 64)*keyFilterBitsPerRow + 63) / 64
	bits, release := filterWords(int(words))
	return &keyFilter{bits: bits, m: uint64(words) * 64, release: release}
}

// free releases the filter's words.
func (f *keyFilter) free() {
	f.release()
	f.bits = nil
}

// heapWords returns n zeroed words on the Go heap.
func heapWords(n int) ([]uint64, func()) { return make([]uint64, n), func() {} }

// add adds a digest and reports whether the filter may have held it
// before: false means it surely did not.
func (f *keyFilter) add(digest []byte) (maybeSeen bool) {
	var d [16]byte
	copy(d[:], digest)
	h1, h2 := binary.LittleEndian.Uint64(d[:8]), binary.LittleEndian.Uint64(d[8:])|1
	seen := true
	for i := uint64(0); i < keyFilterProbes; i++ {
		bit := (h1 + i*h2) % f.m
		w, mask := bit/64, uint64(1)<<(bit%64)
		if f.bits[w]&mask == 0 {
			seen = false
			f.bits[w] |= mask
		}
	}
	return seen
}

// keyScreen screens an import's key digests in file order (keyFilter):
// the rows that may repeat an earlier row's key are suspects, and their
// digests the only ones the store's duplicate check looks at. Both are
// kept flat, in file order (8 and 16 bytes a suspect, where a map and a
// slice per digest took about 60), for a file with many repeated keys.
type keyScreen struct {
	filter *keyFilter
	// mu guards what the reading goroutine appends and the inline work
	// reads, in another goroutine.
	mu         sync.Mutex
	suspects   []int64 // row numbers, ascending
	next       int     // isSuspect's place in suspects
	candidates []byte  // their digests, 16 bytes each
	// held are the suspects the inline work held back (hold), in file
	// order, so that the store need not read them back; dropped once
	// they take more than maxHeld bytes.
	held      []driver.IngestRow
	heldBytes int
	heldOver  bool
	maxHeld   int
}

// maxHeld bounds the bytes of the suspects' rows an inline import keeps
// for the store: about 5,000 rows of the customers file (a few in a
// thousand rows are suspects), fewer of a wide one. Past it the store
// reads them back.
const maxHeld = 1 << 20

// maxCandidates bounds the digests handed to the store: past it (a file
// with many repeated keys), the store checks every digest instead.
const maxCandidates = 100_000

// newKeyScreen returns the screen of a kind with a natural key (nil
// without one), sized for about n rows, holding up to held bytes of
// suspects.
func newKeyScreen(keyed bool, n int64, held int) *keyScreen {
	if !keyed {
		return nil
	}
	return &keyScreen{filter: newKeyFilter(n), maxHeld: held}
}

// add screens a valid row's digest (nil for an invalid row), in file
// order.
func (s *keyScreen) add(row int64, digest []byte) {
	if s == nil || digest == nil || !s.filter.add(digest) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suspects = append(s.suspects, row)
	if len(s.candidates) <= maxCandidates*16 {
		var d [16]byte
		copy(d[:], digest)
		s.candidates = append(s.candidates, d[:]...)
	}
}

// close releases the screen's filter, once nothing reads or checks rows
// any more (the store's ingest returned).
func (s *keyScreen) close() {
	if s != nil {
		s.filter.free()
	}
}

// duplicateKey adds the screen to the store's duplicate check.
func (s *keyScreen) duplicateKey(k driver.DuplicateKey) driver.DuplicateKey {
	if s != nil && k.Name != "" {
		k.Screen = s.result
	}
	return k
}

// result is what the screen found once every row is read: the digests
// the store must check and the suspects' row numbers, unless there are too
// many to hand over.
func (s *keyScreen) result() (driver.Screened, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.candidates) > maxCandidates*16 {
		return driver.Screened{}, false
	}
	out := make([][]byte, 0, len(s.candidates)/16)
	for i := 0; i < len(s.candidates); i += 16 {
		out = append(out, s.candidates[i:i+16:i+16])
	}
	res := driver.Screened{Candidates: out, Suspects: s.suspects}
	if !s.heldOver && len(s.held) == len(s.suspects) {
		res.Held = s.held // every suspect held, in the same order
	}
	return res, true
}

// hold keeps a suspect the inline work held back, for the store to work
// once the duplicates are known (Screened.Held).
func (s *keyScreen) hold(r driver.IngestRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := 64 // the row and its slice headers
	for _, v := range r.Values {
		size += 16 + len(v)
	}
	if s.heldOver || s.heldBytes+size > s.maxHeld {
		s.held, s.heldOver = nil, true
		return
	}
	s.heldBytes += size
	s.held = append(s.held, driver.IngestRow{RowNo: r.RowNo, ChunkNo: r.ChunkNo, State: rows.StateValid, Values: r.Values})
}

// isSuspect reports whether a row's key may repeat an earlier row's. It
// is asked about rows in file order, each after add saw it.
func (s *keyScreen) isSuspect(row int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.next < len(s.suspects) && s.suspects[s.next] < row {
		s.next++
	}
	return s.next < len(s.suspects) && s.suspects[s.next] == row
}
