package batchctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/schemarecalc"
	"github.com/rowfate/rowfate/tableschema"
)

// isRecalcFile reads a file kind add was given and reports whether it is
// a recalculation file (x-recalc) rather than a Table Schema; a file that
// cannot be read is left to the schema's path, which says why.
func isRecalcFile(path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil || !schemarecalc.IsRecalc(data) {
		return nil, false
	}
	return data, true
}

// kindAddRecalc stores a recalculation file as its next version, after
// checking it: its members, the stored schema kind it names and that
// kind's columns, and its statements against the real table (in a
// transaction rolled back), so that a typo is refused here rather than
// failing the first row.
func (c *cli) kindAddRecalc(ctx context.Context, path string, data []byte) error {
	def, err := schemarecalc.Parse(data, path)
	if err != nil {
		return schemaMistakes("recalculation file", err)
	}
	if err := c.checkBuiltin(ctx, def.Name); err != nil {
		return err
	}
	a, err := c.open(ctx, create)
	if err != nil {
		return err
	}
	defer a.close()
	if cur, err := a.engine.KindGet(ctx, batch.KindGetParams{Name: def.Name}); err == nil && cur.Format != schemarecalc.Format {
		return usagef("%s is a stored schema kind: name the recalculation otherwise (x-recalc)", def.Name)
	}
	sd, err := a.engine.KindGet(ctx, batch.KindGetParams{Name: def.Kind})
	if errors.Is(err, batch.ErrNotFound) || (err == nil && sd.Format == schemarecalc.Format) {
		return usagef("%s: kind %s is not a stored schema kind: add its Table Schema first (batchctl kind add FILE%s, with x-name %s)", path, def.Kind, c.hint(), def.Kind)
	}
	if err != nil {
		return err
	}
	s, err := tableschema.Parse([]byte(sd.Definition), fmt.Sprintf("kind %s v%d", sd.Name, sd.Version))
	if err != nil {
		return fmt.Errorf("the stored schema of kind %s: %w", def.Kind, err)
	}
	if err := schemarecalc.Bind(def, s, path); err != nil {
		return schemaMistakes("recalculation file", err)
	}
	rc, err := schemarecalc.New(def, s, schemarecalc.Config(a.kinds))
	if err != nil {
		return usagef("%v", err)
	}
	if err := rc.Check(ctx); err != nil {
		return usagef("%v", err)
	}
	if cur, err := a.engine.KindGet(ctx, batch.KindGetParams{Name: def.Name}); err == nil && cur.Definition == string(data) {
		return c.printRecalc(cur, def, s, "unchanged")
	}
	d, err := a.engine.KindPut(ctx, batch.KindPutParams{Name: def.Name, Format: schemarecalc.Format, Definition: string(data)})
	if errors.Is(err, batch.ErrConflict) {
		return fmt.Errorf("another process stored a version of kind %s at the same moment: run the command again", def.Name)
	}
	if err != nil {
		return err
	}
	return c.printRecalc(d, def, s, "stored")
}

// schemaMistakes is a usage error listing a file's mistakes, each with
// its JSON path.
func schemaMistakes(what string, err error) error {
	var es tableschema.Errors
	if errors.As(err, &es) {
		return usagef("the %s has %d mistake(s):\n  %s", what, len(es), strings.ReplaceAll(es.Error(), "\n", "\n  "))
	}
	return usagef("%v", err)
}

func (c *cli) printRecalc(d *batchtype.KindDefinition, def *schemarecalc.Definition, s *tableschema.Schema, what string) error {
	var sets []string
	for _, a := range def.Set {
		sets = append(sets, a.Column)
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"name": d.Name, "version": d.Version, "status": what, "format": d.Format,
			"kind": def.Kind, "table": s.Table, "where": def.Where, "set": sets, "call": def.Call})
	}
	how := "sets " + strings.Join(sets, ", ")
	if def.Call != "" {
		how = "calls " + def.Call
	}
	filter := "no filter"
	if len(def.Where) > 0 {
		filter = "--where on " + strings.Join(def.Where, ", ")
	}
	fmt.Fprintf(c.stdout, "kind %s %s: recalc v%d of kind %s (table %s), %s, %s\n", d.Name, what, d.Version, def.Kind, s.Table, how, filter)
	return nil
}
