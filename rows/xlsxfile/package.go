package xlsxfile

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// This file inspects an XLSX package with archive/zip before the sheet is
// read: what kind of file it really is, whether its parts fit the limits,
// and whether any XML part declares a DOCTYPE. It also reads the small parts
// the reader needs (workbook, relationships, styles) and the shared
// strings table.

// Magic numbers at the start of the files an XLSX upload may really be.
var (
	xlsxZipMagic = []byte("PK\x03\x04")
	xlsxOLEMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
)

// xlsxSmallPartBytes caps the parts this file reads whole (workbook,
// relationships, styles, the ODS mimetype).
const xlsxSmallPartBytes = 16 << 20

// xlsxPrologBytes is how far into an XML part the DOCTYPE check looks for the
// root element. A DOCTYPE can only come before it; a prolog longer than this
// (comments, processing instructions) is itself a rejection.
const xlsxPrologBytes = 64 << 10

// xlsxOLEKind tells apart the two things an OLE compound file uploaded as
// .xlsx usually is, by the names of its streams (UTF-16LE in the directory):
// an encrypted (password-protected) OOXML package, or a legacy .xls.
func xlsxOLEKind(r io.ReaderAt, size int64) error {
	utf16 := func(s string) []byte {
		b := make([]byte, 0, 2*len(s))
		for i := 0; i < len(s); i++ {
			b = append(b, s[i], 0)
		}
		return b
	}
	encrypted, workbook, book := utf16("EncryptedPackage"), utf16("Workbook"), utf16("Book")
	found := func(needle []byte) bool {
		const chunk = 1 << 20
		buf := make([]byte, chunk+64)
		for off := int64(0); off < size; off += chunk {
			n, _ := r.ReadAt(buf, off)
			if bytes.Contains(buf[:n], needle) {
				return true
			}
		}
		return false
	}
	switch {
	case found(encrypted):
		return errors.New("the workbook is password-protected (encrypted); remove the password in Excel and upload it again")
	case found(workbook) || found(book):
		return errors.New("this is a legacy .xls workbook (Excel 97-2003), not .xlsx; save it as .xlsx and upload it again")
	}
	return errors.New("this is an OLE compound file (an old Office format), not an .xlsx workbook")
}

// xlsxPackage is what the inspection learned about a workbook.
type xlsxPackage struct {
	zr       *zip.Reader
	parts    map[string]*zip.File // by lower-case normalised name
	sheets   []xlsxSheetInfo
	date1904 bool
	styles   xlsxStyles
	// sst is the shared strings table; nil when the workbook has none.
	// Close it.
	sst *xlsxSST
}

// xlsxSheetInfo is one sheet of the workbook, in tab order.
type xlsxSheetInfo struct {
	Name   string
	Hidden bool
	Part   string // the zip part of a worksheet; empty for a chartsheet or a missing target
}

// inspectXLSX checks a zip that claims to be an XLSX workbook against the
// options' limits and reads its workbook, relationships, styles and
// shared strings (spilled to dir when large).
func inspectXLSX(ra io.ReaderAt, size int64, o *xlsxOpts, dir string) (*xlsxPackage, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("the file is not a readable zip archive (damaged or truncated?): %v", err)
	}
	p := &xlsxPackage{zr: zr, parts: make(map[string]*zip.File, len(zr.File))}
	if err := p.index(o); err != nil {
		return nil, err
	}
	if err := p.checkKind(); err != nil {
		return nil, err
	}
	for name, f := range p.parts {
		if err := xlsxCheckProlog(f); err != nil {
			return nil, fmt.Errorf("the zip part %s: %w", name, err)
		}
	}
	if err := p.readWorkbook(); err != nil {
		return nil, err
	}
	if f := p.part("xl/sharedStrings.xml"); f != nil {
		if p.sst, err = xlsxReadSST(f, dir, o.MaxSharedStrings, xlsxSSTMemBytes); err != nil {
			return nil, fmt.Errorf("the shared strings: %w", err)
		}
		if n := p.sst.len(); n > o.MaxSharedStrings {
			p.close()
			return nil, fmt.Errorf("the workbook has %d distinct texts (shared strings), more than the limit of %d", n, o.MaxSharedStrings)
		}
	}
	if p.part("xl/styles.xml") != nil {
		if err := p.styles.read(p, "xl/styles.xml"); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// close releases the shared strings' temporary file.
func (p *xlsxPackage) close() error {
	if p == nil {
		return nil
	}
	return p.sst.close()
}

// subject returns the document's subject (docProps/core.xml), where an
// error report records the batch it reports on; "" when there is none.
func (p *xlsxPackage) subject() string {
	if p.part("docProps/core.xml") == nil {
		return ""
	}
	var core struct {
		Subject string `xml:"subject"`
	}
	if err := p.decode("docProps/core.xml", &core); err != nil {
		return ""
	}
	return core.Subject
}

// index lists the zip's parts by their normalised names and checks them
// against the limits on the sizes the archive declares, before anything
// is inflated.
func (p *xlsxPackage) index(o *xlsxOpts) error {
	var total, inMemory uint64
	for _, f := range p.zr.File {
		name := strings.ToLower(strings.ReplaceAll(f.Name, "\\", "/"))
		if _, dup := p.parts[name]; dup {
			return fmt.Errorf("the zip holds the part %s twice", f.Name)
		}
		p.parts[name] = f
		if f.Flags&0x1 != 0 {
			return fmt.Errorf("the zip part %s is encrypted", f.Name)
		}
		total += f.UncompressedSize64
		if total > uint64(o.MaxUnzipBytes) {
			return fmt.Errorf("the workbook unpacks to more than %d bytes", o.MaxUnzipBytes)
		}
		// A part that inflates far more than any spreadsheet does is a zip
		// bomb: refuse it on the sizes the archive declares, before anything
		// is inflated. archive/zip refuses to read past a declared size, so
		// a part cannot lie its way under this check.
		if f.UncompressedSize64 > 1<<20 && f.UncompressedSize64 > uint64(o.MaxCompressionRatio)*max(f.CompressedSize64, 1) {
			return fmt.Errorf("the zip part %s inflates %d bytes to %d (more than %d times): a zip bomb?",
				f.Name, f.CompressedSize64, f.UncompressedSize64, o.MaxCompressionRatio)
		}
		// Worksheets and shared strings above the spill size are streamed;
		// the other parts count against MaxMemoryBytes.
		spills := (strings.HasPrefix(name, "xl/worksheets/sheet") || name == "xl/sharedstrings.xml") &&
			f.UncompressedSize64 > uint64(o.spillBytes)
		if !spills && !strings.HasPrefix(name, "xl/worksheets/") && f.UncompressedSize64 > xlsxSmallPartBytes &&
			(strings.HasSuffix(name, ".xml") || strings.HasSuffix(name, ".rels") || strings.HasSuffix(name, ".vml")) {
			// Read whole, and parsed into structs several times their size.
			return fmt.Errorf("the zip part %s is %d bytes unpacked, more than the limit of %d", f.Name, f.UncompressedSize64, xlsxSmallPartBytes)
		}
		if !spills {
			inMemory += f.UncompressedSize64
			if inMemory > uint64(o.MaxMemoryBytes) {
				return fmt.Errorf("the workbook's parts other than large sheets take more than %d bytes unpacked", o.MaxMemoryBytes)
			}
		}
	}
	return nil
}

// checkKind refuses the zips that are other documents than an XLSX
// workbook, naming what they are so the user knows what to save instead.
func (p *xlsxPackage) checkKind() error {
	if f := p.parts["mimetype"]; f != nil {
		b, _ := xlsxReadPart(f, 256)
		if bytes.HasPrefix(b, []byte("application/vnd.oasis.opendocument.spreadsheet")) {
			return errors.New("this is an OpenDocument spreadsheet (.ods), not .xlsx; save it as .xlsx and upload it again")
		}
		if bytes.HasPrefix(b, []byte("application/vnd.oasis.opendocument")) {
			return errors.New("this is an OpenDocument file, not an .xlsx workbook")
		}
	}
	if p.parts["xl/workbook.bin"] != nil {
		return errors.New("this is a binary workbook (.xlsb), not .xlsx; save it as .xlsx and upload it again")
	}
	return nil
}

// readWorkbook reads the workbook part: its date system and its sheets in
// tab order, each with the worksheet part its relationship names.
func (p *xlsxPackage) readWorkbook() error {
	wbPath := "xl/workbook.xml"
	rels, err := p.rels("_rels/.rels")
	if err != nil {
		return err
	}
	for _, r := range rels {
		if strings.HasSuffix(r.Type, "/officeDocument") {
			wbPath = strings.TrimPrefix(r.Target, "/")
		}
	}
	if p.part(wbPath) == nil {
		return errors.New("the zip is not an XLSX workbook: it has no workbook part (xl/workbook.xml)")
	}
	var wb struct {
		Pr *struct {
			Date1904 string `xml:"date1904,attr"`
		} `xml:"workbookPr"`
		Sheets []struct {
			Name  string     `xml:"name,attr"`
			State string     `xml:"state,attr"`
			Attrs []xml.Attr `xml:",any,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := p.decode(wbPath, &wb); err != nil {
		return err
	}
	if wb.Pr != nil {
		p.date1904 = wb.Pr.Date1904 == "1" || strings.EqualFold(wb.Pr.Date1904, "true")
	}
	dir := path.Dir(wbPath)
	relPath := strings.TrimPrefix(dir+"/_rels/"+path.Base(wbPath)+".rels", "./")
	if rels, err = p.rels(relPath); err != nil {
		return err
	}
	for _, s := range wb.Sheets {
		info := xlsxSheetInfo{Name: s.Name, Hidden: s.State == "hidden" || s.State == "veryHidden"}
		var id string
		for _, a := range s.Attrs {
			if a.Name.Local == "id" && a.Name.Space != "" {
				id = a.Value // r:id, whatever the prefix's namespace
			}
		}
		for _, r := range rels {
			if id == "" || r.ID != id || !strings.HasSuffix(r.Type, "/worksheet") {
				continue
			}
			// The same resolution as excelize's getWorksheetPath, so that
			// the part read is the one excelize (and Excel) would read.
			target := strings.ReplaceAll(r.Target, "\\", "/")
			if strings.HasPrefix(target, "/") {
				info.Part = strings.TrimPrefix(path.Clean(target), "/")
			} else {
				info.Part = strings.TrimPrefix(path.Clean(dir+"/"+target), "/")
			}
		}
		p.sheets = append(p.sheets, info)
	}
	if len(p.sheets) == 0 {
		return errors.New("the workbook has no sheets")
	}
	return nil
}

// part returns the zip entry of a part by name, as excelize finds it.
func (p *xlsxPackage) part(name string) *zip.File {
	return p.parts[strings.ToLower(name)]
}

type xlsxRel struct {
	ID     string `xml:"Id,attr"`
	Type   string `xml:"Type,attr"`
	Target string `xml:"Target,attr"`
}

func (p *xlsxPackage) rels(name string) ([]xlsxRel, error) {
	if p.part(name) == nil {
		return nil, nil
	}
	var rels struct {
		Rels []xlsxRel `xml:"Relationship"`
	}
	if err := p.decode(name, &rels); err != nil {
		return nil, err
	}
	return rels.Rels, nil
}

// decode unmarshals a small part.
func (p *xlsxPackage) decode(name string, v any) error {
	f := p.part(name)
	if f == nil {
		return fmt.Errorf("the workbook has no part %s", name)
	}
	b, err := xlsxReadPart(f, xlsxSmallPartBytes)
	if err != nil {
		return fmt.Errorf("the zip part %s: %w", name, err)
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the zip part %s is not valid XML: %v", name, err)
	}
	return nil
}

// xlsxReadPart reads a whole part, refusing one larger than limit.
func xlsxReadPart(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("is %d bytes, more than the limit of %d", f.UncompressedSize64, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("cannot be opened: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return nil, fmt.Errorf("cannot be read (damaged?): %v", err)
	}
	return b, nil
}

// xlsxCheckProlog rejects an XML part whose prolog declares a DOCTYPE.
// Go's encoding/xml expands no entities, but a DOCTYPE has no business in
// an XLSX part and is what entity-expansion attacks look like, so the
// whole file is refused. Parts that are not XML (images, binaries) are
// skipped.
func xlsxCheckProlog(f *zip.File) error {
	if f.FileInfo().IsDir() || f.UncompressedSize64 == 0 {
		return nil
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("cannot be opened: %v", err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(io.LimitReader(rc, xlsxPrologBytes), 4096)
	head, _ := br.Peek(512)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF}), " \t\r\n")
	if len(head) == 0 || head[0] != '<' {
		// Not XML; but a DOCTYPE may still hide behind a UTF-16 encoding,
		// which no XLSX writer uses.
		if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
			return errors.New("is UTF-16 XML, which XLSX parts never are")
		}
		return nil
	}
	d := xml.NewDecoder(br)
	d.Strict = false
	for {
		tok, err := d.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("has no root element in its first %d bytes", xlsxPrologBytes)
			}
			return nil // malformed XML is the sheet reader's to report
		}
		switch t := tok.(type) {
		case xml.Directive:
			return errors.New("declares a DOCTYPE, which XLSX files never do (entity expansion attack?)")
		case xml.StartElement:
			return nil
		case xml.ProcInst:
			if t.Target == "xml" && bytes.Contains(bytes.ToLower(t.Inst), []byte("utf-16")) {
				return errors.New("is UTF-16 XML, which XLSX parts never are")
			}
		}
	}
}

// xlsxStyles is the part of xl/styles.xml that tells a date from a number:
// each cell format's number format, and the custom format codes.
type xlsxStyles struct {
	xfNumFmt []int          // cellXfs index → numFmtId
	custom   map[int]string // numFmtId → format code
	dateKind map[int]xlsxDateKind
}

func (s *xlsxStyles) read(p *xlsxPackage, name string) error {
	var st struct {
		NumFmts []struct {
			ID   string `xml:"numFmtId,attr"`
			Code string `xml:"formatCode,attr"`
		} `xml:"numFmts>numFmt"`
		Xfs []struct {
			NumFmtID string `xml:"numFmtId,attr"`
		} `xml:"cellXfs>xf"`
	}
	if err := p.decode(name, &st); err != nil {
		return err
	}
	s.custom = make(map[int]string, len(st.NumFmts))
	for _, nf := range st.NumFmts {
		if id, err := strconv.Atoi(nf.ID); err == nil {
			s.custom[id] = nf.Code
		}
	}
	s.xfNumFmt = make([]int, len(st.Xfs))
	for i, xf := range st.Xfs {
		s.xfNumFmt[i], _ = strconv.Atoi(xf.NumFmtID)
	}
	s.dateKind = map[int]xlsxDateKind{}
	return nil
}

// kind returns whether numbers in cells of style index idx are dates,
// times or plain numbers.
func (s *xlsxStyles) kind(idx int) xlsxDateKind {
	if idx <= 0 || idx >= len(s.xfNumFmt) {
		if idx == 0 && len(s.xfNumFmt) > 0 {
			return s.kindOfFmt(s.xfNumFmt[0])
		}
		return xlsxNumber
	}
	return s.kindOfFmt(s.xfNumFmt[idx])
}

func (s *xlsxStyles) kindOfFmt(id int) xlsxDateKind {
	if k, ok := s.dateKind[id]; ok {
		return k
	}
	var k xlsxDateKind
	if code, ok := s.custom[id]; ok {
		k = xlsxFormatKind(code)
	} else {
		k = xlsxBuiltinKind(id)
	}
	if len(s.dateKind) < 4096 {
		s.dateKind[id] = k
	}
	return k
}
