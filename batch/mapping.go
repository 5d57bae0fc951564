package batch

import (
	"slices"

	"github.com/rowfate/rowfate/rows"
)

// HeaderMapping is how a file's header maps onto a kind's columns, for a
// preview: what matched, what is unknown (ignored by an import), what is
// missing, and whether an import would reject the header.
type HeaderMapping struct {
	Kind    string
	Matched []rows.MappedColumn
	Unknown []string
	Missing []MissingColumn
	// Error is a header the kind rejects (duplicate names, a rename of a
	// column the file lacks); "" when the header maps.
	Error string
	// Suggestions are unknown columns that look like missing ones: an
	// import rejects the file until each is mapped or ignored.
	Suggestions []rows.Suggestion
}

// MissingColumn is a kind's column the header lacks.
type MissingColumn struct {
	Column string
	// Required: an import rejects the file without it.
	Required bool
}

// Rejected reports whether an import of the kind would reject the header.
func (m *HeaderMapping) Rejected() bool {
	if m == nil {
		return false
	}
	return m.Error != "" || len(m.Suggestions) > 0 || slices.ContainsFunc(m.Missing, func(c MissingColumn) bool { return c.Required })
}

// HeaderMapping maps a header onto a kind's columns as an import would,
// and says what it found instead of rejecting the header. An unknown kind
// is ErrUnknownKind.
func (r *Registry) HeaderMapping(kindName string, header []string, conv rows.Conventions) (*HeaderMapping, error) {
	k, err := r.lookup(kindName)
	if err != nil {
		return nil, err
	}
	hm := &HeaderMapping{Kind: kindName, Matched: []rows.MappedColumn{}, Unknown: []string{}, Missing: []MissingColumn{}}
	m, err := k.binder().MapFile(header, conv)
	if err != nil {
		hm.Error = err.Error()
		return hm, nil
	}
	required := k.info().Required
	hm.Matched = append(hm.Matched, m.Matched()...)
	hm.Unknown = append(hm.Unknown, m.Unknown...)
	hm.Suggestions = m.Suggestions
	for _, col := range m.Missing {
		hm.Missing = append(hm.Missing, MissingColumn{Column: col, Required: slices.Contains(required, col)})
	}
	return hm, nil
}
