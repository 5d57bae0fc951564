package xlsxfile

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// xlsxSST is a workbook's shared strings table (the distinct texts an
// Excel-made sheet's cells refer to by index), read by index without
// holding the table as Go strings. The strings are stored back to back,
// with a 4-byte offset per string: in memory while they take at most
// xlsxSSTMemBytes, in a temporary file past that, read back through a
// window of the file (a sheet refers to its strings in about the order
// they were first used, which is the table's) and a small cache by index
// (for the few texts a column repeats). A 2,000,000-string table costs
// 8 MB of offsets and a few MB of cache and buffers, where excelize
// indexed it with about 60 bytes a string.
type xlsxSST struct {
	n int
	// offs are the n+1 offsets into the strings, in chunks of
	// xlsxSSTChunk so that a growing table never copies them.
	offs [][]uint32
	mem  string // the strings, when held in memory

	file   *os.File // the strings, when spilled
	win    []byte   // a window of the file, from winOff
	winOff int64
	winLen int // how much the next window reads
	hits   int // lookups the current window served
	cache  []xlsxSSTEntry
}

// xlsxSSTEntry is one slot of the table's cache.
type xlsxSSTEntry struct {
	i int // index + 1; 0 for an empty slot
	s string
}

// xlsxSSTMemBytes is the most string bytes a table holds in memory.
const xlsxSSTMemBytes = 8 << 20

// xlsxSSTChunk is how many offsets a chunk of xlsxSST.offs holds.
const xlsxSSTChunk = 1 << 16

// off returns offset i.
func (t *xlsxSST) off(i int) uint32 { return t.offs[i/xlsxSSTChunk][i%xlsxSSTChunk] }

// addOff appends an offset.
func (t *xlsxSST) addOff(o uint32) {
	if n := len(t.offs); n == 0 || len(t.offs[n-1]) == xlsxSSTChunk {
		t.offs = append(t.offs, make([]uint32, 0, xlsxSSTChunk))
	}
	last := &t.offs[len(t.offs)-1]
	*last = append(*last, o)
}

const (
	xlsxSSTCache  = 4096      // cache slots
	xlsxSSTWinMin = 4 << 10   // window of a table read at random
	xlsxSSTWinMax = 512 << 10 // window of a table read in order
)

func (t *xlsxSST) len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// get returns string i; the caller has checked i against len.
func (t *xlsxSST) get(i int) (string, error) {
	start, end := t.off(i), t.off(i+1)
	if t.file == nil {
		return t.mem[start:end], nil
	}
	slot := &t.cache[i%xlsxSSTCache]
	if slot.i == i+1 {
		return slot.s, nil
	}
	off, n := int64(start), int64(end-start)
	if off < t.winOff || off+n > t.winOff+int64(len(t.win)) {
		if err := t.load(off, n); err != nil {
			return "", err
		}
	}
	t.hits++
	s := string(t.win[off-t.winOff : off-t.winOff+n])
	*slot = xlsxSSTEntry{i: i + 1, s: s}
	return s, nil
}

// load reads a window of the spilled strings that holds [off, off+n): a
// larger one after a window that served many lookups, a smaller one after
// a window that served few, so that reading in order costs few reads and
// reading at random little copying.
func (t *xlsxSST) load(off, n int64) error {
	switch {
	case t.win == nil:
		t.winLen = xlsxSSTWinMax / 8
	case t.hits < 8:
		t.winLen = max(t.winLen/4, xlsxSSTWinMin)
	case t.hits > 64:
		t.winLen = min(t.winLen*2, xlsxSSTWinMax)
	}
	size := max(int64(t.winLen), n)
	if int64(cap(t.win)) < size {
		t.win = make([]byte, size)
	}
	t.win = t.win[:size]
	got, err := t.file.ReadAt(t.win, off)
	if got < int(n) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read the shared strings' temporary file: %w", err)
	}
	t.win, t.winOff, t.hits = t.win[:got], off, 0
	return nil
}

// close removes the temporary file, if any.
func (t *xlsxSST) close() error {
	if t == nil || t.file == nil {
		return nil
	}
	err := errors.Join(t.file.Close(), os.Remove(t.file.Name()))
	t.file = nil
	return err
}

// xlsxSSTBuilder stores strings as xlsxReadSST reads them.
type xlsxSSTBuilder struct {
	t    *xlsxSST
	dir  string
	mem  strings.Builder // String() then costs no copy
	w    *bufio.Writer
	size uint64
	max  int
	// memMax is the most string bytes held in memory.
	memMax int
}

func (b *xlsxSSTBuilder) add(s []byte) error {
	b.t.n++
	if b.t.n > b.max {
		return nil // counted only: the table is refused once read
	}
	b.size += uint64(len(s))
	if b.size > 1<<32-1 {
		return errors.New("the shared strings take more than 4 GiB")
	}
	b.t.addOff(uint32(b.size))
	if b.w == nil && b.mem.Len()+len(s) > b.memMax {
		f, err := os.CreateTemp(b.dir, "sst-*")
		if err != nil {
			return fmt.Errorf("temporary file: %w", err)
		}
		b.t.file = f
		b.w = bufio.NewWriterSize(f, 256<<10)
		if _, err := b.w.WriteString(b.mem.String()); err != nil {
			return fmt.Errorf("temporary file: %w", err)
		}
		b.mem = strings.Builder{}
	}
	if b.w != nil {
		if _, err := b.w.Write(s); err != nil {
			return fmt.Errorf("temporary file: %w", err)
		}
		return nil
	}
	b.mem.Write(s)
	return nil
}

func (b *xlsxSSTBuilder) finish() error {
	if b.w == nil {
		b.t.mem = b.mem.String()
		return nil
	}
	b.t.cache = make([]xlsxSSTEntry, xlsxSSTCache)
	if err := b.w.Flush(); err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	return nil
}

// xlsxReadSST reads the shared strings part: each <si>'s text is its <t>,
// or the <t> of each rich text run (<r>), phonetic runs (<rPh>) and
// properties left out, as Excel shows the cell. Past max strings it only
// counts them, for the caller's error. A table of more than memMax bytes
// of text is spilled to a file created in dir.
func xlsxReadSST(f *zip.File, dir string, max, memMax int) (*xlsxSST, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	t := &xlsxSST{}
	t.addOff(0)
	b := &xlsxSSTBuilder{t: t, dir: dir, max: max, memMax: memMax}
	// The part's size bounds its text: growing the strings by doubling
	// would take twice their size at the end.
	b.mem.Grow(int(min(f.UncompressedSize64, uint64(memMax))))
	if err := xlsxScanSST(newXLSXXML(rc), b); err != nil {
		t.close()
		return nil, err
	}
	if err := b.finish(); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// xlsxScanSST walks the table's XML and adds each string to b.
func xlsxScanSST(x *xlsxXML, b *xlsxSSTBuilder) error {
	var (
		text  []byte
		in    bool // inside an <si>
		path  [4]byte
		depth int // inside the <si>
	)
	for {
		collect := in && b.t.n < b.max && (depth == 1 && path[0] == 't' || depth == 2 && path[0] == 'r' && path[1] == 't')
		var err error
		if collect {
			err = x.nextText(&text)
		} else {
			err = x.next()
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return errors.New("the XML ends early (truncated?)")
			}
			var se *xlsxSyntaxError
			if errors.As(err, &se) {
				return fmt.Errorf("the XML is malformed: %v", se.msg)
			}
			if errors.Is(err, errXLSXDoctype) {
				return errors.New("the part declares a DOCTYPE")
			}
			return err
		}
		switch x.kind {
		case xlsxTokEOF:
			if in {
				return errors.New("the XML ends early (truncated?)")
			}
			return nil
		case xlsxTokStart:
			name := string(x.name)
			if !in {
				if name == "si" {
					text = text[:0]
					if x.selfClose {
						if err := b.add(nil); err != nil {
							return err
						}
						continue
					}
					in, depth = true, 0
				}
				continue
			}
			if x.selfClose {
				continue
			}
			code := byte('o')
			switch name {
			case "t":
				code = 't'
			case "r":
				code = 'r'
			}
			if depth < len(path) {
				path[depth] = code
			}
			depth++
		case xlsxTokEnd:
			if !in {
				continue
			}
			if depth > 0 {
				depth--
				continue
			}
			in = false
			s := xlsxBstr(text)
			if !utf8.Valid(s) {
				return fmt.Errorf("string %d is not valid UTF-8", b.t.n)
			}
			if err := b.add(s); err != nil {
				return err
			}
		}
	}
}
