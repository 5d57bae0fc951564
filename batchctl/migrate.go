package batchctl

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (c *cli) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or update the database schema",
		Long: `Create the database (a SQLite file) or the engine's schema (PostgreSQL,
"rowfate" unless --schema or the URL's search_path says otherwise) and
apply every pending migration, in one transaction under a lock, so that
several processes starting at once all succeed. A database migrated by a
newer batchctl is refused, unchanged.`,
		Example: `  batchctl migrate
  batchctl migrate --database postgres://localhost/app --schema imports`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			app, err := c.open(cmd.Context(), create) // opening migrates
			if err != nil {
				return err
			}
			app.close()
			if c.global.output == "json" {
				return c.json(map[string]string{"status": "migrated"})
			}
			fmt.Fprintln(c.stdout, "schema is up to date")
			return nil
		},
	}
}
