package server

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// SavedOptionsView is what a tenant declared for its last import of a
// file with the same header: the page offers it for the next one, and
// POST /v1/batches takes Options as they are.
type SavedOptionsView struct {
	BatchID   int64         `json:"batch_id"`
	CreatedAt time.Time     `json:"created_at"`
	Options   ImportOptions `json:"options"`
}

// savedOptions finds the options of the tenant's last import of kind
// with this header; nil when there is none or it declared nothing.
func (s *Server) savedOptions(r *http.Request, tenant, kind string, header []string) (*SavedOptionsView, error) {
	if kind == "" || len(header) == 0 {
		return nil, nil
	}
	b, err := s.cfg.Engine.LastImport(r.Context(), batch.LastImportParams{TenantID: tenant, Kind: kind, Header: header})
	if errors.Is(err, batch.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o := declaredOptions(b)
	if o.Locale == "" && !o.DecimalComma && o.DateOrder == "" && o.DateFormat == "" && len(o.Map) == 0 && len(o.Ignore) == 0 {
		return nil, nil
	}
	return &SavedOptionsView{BatchID: b.ID, CreatedAt: b.CreatedAt, Options: o}, nil
}

// declaredOptions are a batch's conventions as import options: only what
// the import declared. A date order the file settled by itself is not
// offered (the next file may read the other way); a number format is
// offered as the locale that writes it, or the decimal comma.
func declaredOptions(b *batchtype.Batch) ImportOptions {
	c := b.Conventions
	var o ImportOptions
	switch {
	case rows.LocaleOf(c.Number) != "":
		o.Locale = rows.LocaleOf(c.Number)
	case c.Number.Decimal == rows.DecimalComma.Decimal && slices.Equal(c.Number.Groups, rows.DecimalComma.Groups):
		o.DecimalComma = true
	}
	if c.DateOrderRow == 0 && (c.DateOrder == rows.DMY || c.DateOrder == rows.MDY) {
		o.DateOrder = string(c.DateOrder)
	}
	o.DateFormat = string(c.DateFormat)
	for _, r := range c.Renames {
		if o.Map == nil {
			o.Map = map[string]string{}
		}
		o.Map[r.From] = r.To
	}
	o.Ignore = c.Ignore
	return o
}
