package batchctl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// completions makes the shell completion (batchctl completion bash|zsh|fish)
// offer what the commands take, not only their names and flags: a
// <batch> argument offers the tenant's recent batches, a <kind> the kinds
// (stored ones too), --state the row states, --locale and --date-order
// their values. It walks the tree once, by each command's Use, so a new
// command gets them without code of its own.
func (c *cli) completions(root *cobra.Command) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.ValidArgsFunction == nil {
			switch first := strings.Fields(cmd.Use + " -"); {
			case len(first) > 1 && strings.HasPrefix(first[1], "<batch>"), len(first) > 1 && first[1] == "[<batch>]":
				cmd.ValidArgsFunction = c.completeFirst(c.batchIDs)
			case len(first) > 1 && first[1] == "<kind>":
				cmd.ValidArgsFunction = c.completeFirst(c.kindNames)
			}
		}
		for name, values := range map[string][]string{
			"state":      stateNames(),
			"locale":     rows.Locales(),
			"date-order": {string(rows.DMY), string(rows.MDY)},
			"format":     {"csv", "xlsx"},
		} {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeFirst completes a command's first argument with list; the
// others (a file) as the shell would.
func (c *cli) completeFirst(list func(ctx context.Context) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		// prepare, which records where --database came from, does not run
		// for a completion.
		c.global.databaseFlag = cmd.Flags().Changed("database")
		c.global.schemaFlag = cmd.Flags().Changed("pg-schema")
		return list(cmd.Context()), cobra.ShellCompDirectiveNoFileComp
	}
}

// batchIDs are the tenant's recent batches, each with what it is, for a
// <batch> argument; none without a database (completion never creates
// one).
func (c *cli) batchIDs(ctx context.Context) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	a, err := c.open(ctx, readOnly)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	defer a.close()
	bs, err := a.engine.Batches(ctx, batch.BatchesParams{TenantID: c.global.tenant, Limit: 50})
	if err != nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = fmt.Sprintf("%d\t%s %s %s", b.ID, b.Kind, b.Status, b.SourceName)
	}
	return out
}

// kindNames are the kinds, built in and stored, for a <kind> argument.
func (c *cli) kindNames(ctx context.Context) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	reg, err := c.registryWith(ctx, "\x00stored")
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range append(reg.Kinds(), reg.ExportKinds()...) {
		if !seen[k.Name] {
			seen[k.Name] = true
			out = append(out, k.Name+"\t"+k.Description)
		}
	}
	return out
}

func stateNames() []string {
	out := make([]string, len(rows.States))
	for i, s := range rows.States {
		out[i] = string(s)
	}
	return out
}
