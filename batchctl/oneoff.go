package batchctl

import (
	"bufio"
	"context"
	"fmt"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

// oneOffKind registers, in the app's registry, the kind a batch was
// imported with by import --schema: no store keeps that kind, the batch
// does (Batch.KindDefinition). A command that re-runs, retries, reports
// or works the batch then reads its rows as its import did. A batch of
// any other kind, or one that does not exist, is left to the command,
// which says so its own way.
func (c *cli) oneOffKind(ctx context.Context, a *app, id int64) error {
	b, err := a.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	if err != nil || b.KindDefinition == "" {
		return nil
	}
	s, err := tableschema.Parse([]byte(b.KindDefinition), fmt.Sprintf("the schema of batch %d", id))
	if err != nil {
		return fmt.Errorf("batch %d was imported with a schema this version of batchctl no longer reads: %w", id, err)
	}
	return schemakind.RegisterAll(a.engine.Registry(), s, 0, a.kinds)
}

// reportSchema returns the schema of the batch whose error report path is,
// when that batch was imported with import --schema and its kind is kind:
// importing the fixed report of such a batch (import KIND report.csv)
// re-runs it as for any other kind. Nil otherwise.
func (c *cli) reportSchema(ctx context.Context, kind, path string, o importOptions) (*tableschema.Schema, error) {
	p := batch.ImportParams{SourceName: path}
	if err := o.read.apply(&p); err != nil {
		return nil, err
	}
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := batch.OpenReader(bufio.NewReader(f), p)
	if err != nil {
		return nil, nil // the import says what is wrong with the file
	}
	id, ok := batch.ReportOf(r.Info())
	if h := r.Header(); !ok && len(h) > 0 {
		// Without a kind to find the header by, a CSV report's title line
		// is read as its header.
		id, ok = rows.ParseReportTitle(h[0])
	}
	r.Close()
	if !ok {
		return nil, nil
	}
	a, err := c.open(ctx, readOnly)
	if err != nil {
		return nil, nil // no database: no batch
	}
	defer a.close()
	b, err := a.engine.Batch(ctx, batch.BatchParams{TenantID: c.global.tenant, ID: id})
	if err != nil || b.KindDefinition == "" || b.Kind != kind {
		return nil, nil
	}
	s, err := tableschema.Parse([]byte(b.KindDefinition), fmt.Sprintf("the schema of batch %d", id))
	if err != nil {
		return nil, fmt.Errorf("batch %d was imported with a schema this version of batchctl no longer reads: %w", id, err)
	}
	return s, nil
}
