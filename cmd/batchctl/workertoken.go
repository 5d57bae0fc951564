package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
)

// devToken is the development credential: it works, with a loud warning,
// so that a laptop needs no setup; never in production.
const devToken = "dev"

// tokenHash is how a token is stored and looked up: never the token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (c *cli) workerTokenCommand() *cobra.Command {
	var allTenants bool
	create := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a worker credential and print its token, once",
		Long: `Create a worker credential: a name (recorded on every lease its workers
take) and the tenants it may work (--tenant, or --all-tenants). The token
is printed once; only its SHA-256 is stored. Give it to the worker with
--worker-token or ROWFATE_WORKER_TOKEN.`,
		Example: `  batchctl worker-token create eu-worker-1 --tenant acme
  ROWFATE_WORKER_TOKEN=$(batchctl worker-token create ci --all-tenants) batchctl worker --until-done`,
		Args: args(1, "<name>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			var b [32]byte
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			token := "rfw_" + base64.RawURLEncoding.EncodeToString(b[:])
			var tenants []string
			if !allTenants {
				tenants = []string{c.global.tenant}
			}
			app, err := c.open(cmd.Context(), create)
			if err != nil {
				return err
			}
			defer app.close()
			if err := app.store.WorkerCreate(cmd.Context(), batch.WorkerCreateParams{Name: a[0], TokenHash: tokenHash(token), TenantIDs: tenants}); err != nil {
				if errors.Is(err, batch.ErrConflict) {
					return fmt.Errorf("a worker named %q exists already", a[0])
				}
				return err
			}
			if c.global.output == "json" {
				return c.json(map[string]any{"name": a[0], "tenant_ids": tenants, "token": token})
			}
			fmt.Fprintln(c.stdout, token)
			return nil
		},
	}
	create.Flags().BoolVar(&allTenants, "all-tenants", false, "the worker may work every tenant")
	cmd := &cobra.Command{
		Use:     "worker-token",
		Short:   "Manage worker credentials",
		Long:    `Worker credentials: batchctl worker refuses to start without one.`,
		Example: `  batchctl worker-token create eu-worker-1 --tenant acme`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("worker-token needs a subcommand: create")
		},
	}
	cmd.AddCommand(create)
	return cmd
}

// workerIdentity checks a worker's credential and returns its name and
// the tenants it works: the credential's, narrowed to --tenant when that
// flag was given. The token is compared by its hash (in constant time by
// the store) and never printed.
func (c *cli) workerIdentity(ctx context.Context, store batch.Store, token string, tenantFlag bool) (string, []string, error) {
	if token == "" {
		token = os.Getenv("ROWFATE_WORKER_TOKEN")
	}
	if token == "" {
		return "", nil, usagef("a worker needs a credential: --worker-token or ROWFATE_WORKER_TOKEN (make one with `batchctl worker-token create NAME%s`; --worker-token dev for development)", c.hint())
	}
	var scope []string
	name := "dev"
	if token == devToken {
		fmt.Fprintln(c.stderr, "WARNING: the development worker token is in use: no credential is checked and every tenant may be worked. Never use it in production; create one with `batchctl worker-token create`.")
	} else {
		w, err := store.WorkerAuth(ctx, tokenHash(token))
		if errors.Is(err, batch.ErrNotFound) {
			return "", nil, errors.New("the worker token is not valid (unknown or revoked)")
		}
		if err != nil {
			return "", nil, err
		}
		name, scope = w.Name, w.TenantIDs
	}
	if tenantFlag {
		if len(scope) > 0 && !slices.Contains(scope, c.global.tenant) {
			return "", nil, fmt.Errorf("worker %s may not work tenant %q (its tenants: %v)", name, c.global.tenant, scope)
		}
		scope = []string{c.global.tenant}
	}
	return name, scope, nil
}
