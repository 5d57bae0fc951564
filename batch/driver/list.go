package driver

import "github.com/rowfate/rowfate/batchtype"

// BatchListParams are the parameters of Store.BatchList.
type BatchListParams struct {
	TenantID string
	// BeforeID pages backwards: batches with id < BeforeID; 0 means from
	// the newest.
	BeforeID int64
	// Limit caps the page. Defaults to 20.
	Limit int
	// Status and Kind filter; empty is any.
	Status batchtype.Status
	Kind   string
	// NeedsAttention keeps the batches a person has to look at: paused,
	// or with invalid, failed, dead or unknown rows.
	NeedsAttention bool
}
