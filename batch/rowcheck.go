package batch

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// rowChecker runs a kind's phases over the records of one file, in order,
// and adds the file-wide check the phases cannot make: a natural key seen
// on an earlier row.
//
// An import leaves that check to the store (checkStored): each valid row
// carries its key's digest and one statement finds the duplicates, so the
// importer's memory stays flat however long the file is. A dry run, which
// writes nothing, remembers a 16-byte digest and a row number per keyed
// row (check), about 50 bytes a row with the map's overhead. Digests
// rather than the keys themselves keep that flat however long the keys
// are; a collision of 128-bit digests is not a practical concern.
type rowChecker struct {
	k     rowReader
	m     *rows.Mapping
	name  string // the key as messages name it
	col   rows.MappedColumn
	first map[[16]byte]int64
	// tally counts every error check returned, by column and code.
	tally rows.ErrorTally
}

func newRowChecker(k rowReader, m *rows.Mapping) *rowChecker {
	c := &rowChecker{k: k, m: m, name: "key"}
	if n := k.keyName(); n != "" {
		c.name = n
		for _, mc := range m.Matched() {
			if rows.NormalizeHeader(mc.Column) == rows.NormalizeHeader(n) {
				c.col = mc
				c.name = mc.Header
			}
		}
	}
	return c
}

// check returns the errors of one record; none means the row is valid.
func (c *rowChecker) check(ctx context.Context, rec rows.Record) []rows.FieldError {
	errs := c.checkRow(ctx, rec)
	c.tally.Add(errs)
	return errs
}

// checkStored returns the errors of one record and, for a valid row with a
// natural key, the key's digest for the store's duplicate check
// (duplicateKey names the key in its errors).
func (c *rowChecker) checkStored(ctx context.Context, rec rows.Record) ([]rows.FieldError, []byte) {
	errs, key := c.k.check(ctx, c.m, rec)
	c.tally.Add(errs)
	if key == "" {
		return errs, nil
	}
	d := keyDigest(key)
	return nil, d[:]
}

// duplicateKey is how the store names the key in a duplicate's error.
func (c *rowChecker) duplicateKey() driver.DuplicateKey {
	if !c.k.hasKey() {
		return driver.DuplicateKey{}
	}
	return driver.DuplicateKey{Column: c.col.Header, Field: c.col.Field, Name: c.name}
}

func (c *rowChecker) checkRow(ctx context.Context, rec rows.Record) []rows.FieldError {
	errs, key := c.k.check(ctx, c.m, rec)
	if key == "" {
		return errs
	}
	d := keyDigest(key)
	if c.first == nil {
		c.first = map[[16]byte]int64{}
	}
	if first, dup := c.first[d]; dup {
		return []rows.FieldError{{
			Row: rec.Row, Column: c.col.Header, Field: c.col.Field, Code: rows.CodeDuplicateKey,
			Message: fmt.Sprintf("same %s as row %d", c.name, first),
		}}
	}
	c.first[d] = rec.Row
	return nil
}

func keyDigest(key string) [16]byte {
	sum := sha256.Sum256([]byte(key))
	return [16]byte(sum[:16])
}

// MapHeader matches a header against a kind's columns without rejecting it
// for missing columns, so that a preview can show what matched, what is
// unknown and what is missing. Bad headers (empty, duplicate or colliding
// names) are errors wrapping rows.ErrBadHeader.
func (r *Registry) MapHeader(kindName string, header []string, conv rows.Conventions) (*rows.Mapping, error) {
	k, err := r.lookup(kindName)
	if err != nil {
		return nil, err
	}
	return k.binder().MapFile(header, conv)
}

// Template returns a kind's header and its example row (nil when the kind
// has none), the content of an empty file ready to fill in.
func (r *Registry) Template(kindName string) (header, example []string, err error) {
	k, err := r.lookup(kindName)
	if err != nil {
		return nil, nil, err
	}
	return k.template()
}
