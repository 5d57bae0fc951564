package batchctl

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/migrations"
)

// buildVersion is the module version the binary was built from: a release
// tag when installed with go install ...@vX, else "(devel)" and the VCS
// revision when the build recorded one.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// schemaVersions are the highest migration this build knows per store: the
// schema version it expects of a database (migrate brings one up to it).
func schemaVersions() (map[string]int, error) {
	out := map[string]int{}
	for _, e := range []migrations.Engine{migrations.SQLite, migrations.Postgres} {
		all, err := migrations.Load(e)
		if err != nil {
			return nil, err
		}
		if len(all) > 0 {
			out[string(e)] = all[len(all)-1].Version
		}
	}
	return out, nil
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print batchctl's version and the database schema version it expects",
		Long: `Print the version batchctl was built from and the schema version it
expects of a database (batchctl migrate brings a database up to it). It
opens nothing.`,
		Example: `  batchctl version
  batchctl version -o json`,
		Args: args(0, ""),
		RunE: func(*cobra.Command, []string) error { return c.printVersion() },
	}
}

func (c *cli) printVersion() error {
	schema, err := schemaVersions()
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"version": buildVersion(), "schema": schema, "go": runtimeVersion()})
	}
	fmt.Fprintf(c.stdout, "batchctl %s (%s)\nschema: sqlite %d, postgres %d\n", buildVersion(), runtimeVersion(), schema["sqlite"], schema["postgres"])
	return nil
}

func runtimeVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.GoVersion
	}
	return "unknown"
}
