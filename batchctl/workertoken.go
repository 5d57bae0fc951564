package batchctl

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
	"strings"
	"time"

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
			if err := app.engine.WorkerCreate(cmd.Context(), batch.WorkerCreateParams{Name: a[0], TokenHash: tokenHash(token), TenantIDs: tenants}); err != nil {
				if errors.Is(err, batch.ErrConflict) {
					return fmt.Errorf("a worker named %q exists already (names stay taken once revoked: batchctl worker-token list%s)", a[0], c.hint())
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
	list := &cobra.Command{
		Use:   "list",
		Short: "List the worker credentials (never their tokens)",
		Long: `List the worker credentials: name, the tenants each may work, when it was
created and, for a revoked one, when it was revoked. Neither a token nor
its hash is shown. With --tenant, only the credentials that may work that
tenant (its own and those of every tenant). It changes nothing.`,
		Example: `  batchctl worker-token list
  batchctl worker-token list --tenant acme -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.workerTokenList(cmd.Context(), cmd.Flags().Changed("tenant"))
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke <name>",
		Short: "Revoke a worker credential",
		Long: `Revoke a worker credential by its name (batchctl worker-token list): no
worker starts with it again, and a worker running with it stops within a
third of its --lease: it claims nothing more, gives back the rows it
holds (after its --grace), says why and exits 1. The name stays taken.`,
		Example: `  batchctl worker-token revoke eu-worker-1`,
		Args:    args(1, "<name>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.workerTokenRevoke(cmd.Context(), a[0])
		},
	}
	cmd := &cobra.Command{
		Use:   "worker-token",
		Short: "Manage worker credentials",
		Long: `Worker credentials: batchctl worker refuses to start without one (on a
local SQLite file, --worker-token dev skips the check for development).`,
		Example: `  batchctl worker-token create eu-worker-1 --tenant acme
  batchctl worker-token list
  batchctl worker-token revoke eu-worker-1`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("worker-token needs a subcommand: create, list or revoke")
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// workerJSON is a worker credential as worker-token list -o json prints
// it: all_tenants says what an empty tenant_ids means.
type workerJSON struct {
	Name       string     `json:"name"`
	TenantIDs  []string   `json:"tenant_ids"`
	AllTenants bool       `json:"all_tenants"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

func (c *cli) workerTokenList(ctx context.Context, tenantFlag bool) error {
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	var p batch.WorkersParams
	if tenantFlag {
		p.TenantID = c.global.tenant
	}
	ws, err := app.engine.Workers(ctx, p)
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		out := make([]workerJSON, len(ws))
		for i, w := range ws {
			out[i] = workerJSON{Name: w.Name, TenantIDs: w.TenantIDs, AllTenants: w.TenantIDs == nil, CreatedAt: w.CreatedAt, RevokedAt: w.RevokedAt}
			if w.TenantIDs == nil {
				out[i].TenantIDs = []string{}
			}
		}
		return c.json(out)
	}
	if len(ws) == 0 {
		fmt.Fprintf(c.stdout, "no worker credentials; create one: batchctl worker-token create NAME%s\n", c.hint())
		return nil
	}
	for _, w := range ws {
		tenants := "all tenants"
		if w.TenantIDs != nil {
			tenants = strings.Join(w.TenantIDs, ",")
		}
		state := "active"
		if w.RevokedAt != nil {
			state = "revoked " + w.RevokedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(c.stdout, "%s\t%s\tcreated %s\t%s\n", w.Name, tenants, w.CreatedAt.Local().Format("2006-01-02 15:04"), state)
	}
	return nil
}

func (c *cli) workerTokenRevoke(ctx context.Context, name string) error {
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if err := app.engine.WorkerRevoke(ctx, batch.WorkerRevokeParams{Name: name}); err != nil {
		if errors.Is(err, batch.ErrNotFound) {
			return fmt.Errorf("no worker credential named %q (batchctl worker-token list%s)", name, c.hint())
		}
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"name": name, "revoked": true})
	}
	fmt.Fprintf(c.stdout, "worker credential %s revoked\n", name)
	return nil
}

// workerID is who a worker works as: the name its leases carry, the
// tenants it works (nil: every one), and its token's hash, by which the
// credential is checked again while the worker runs ("" for the
// development token, which has no credential to revoke).
type workerID struct {
	name    string
	tenants []string
	hash    string
}

// workerIdentity checks a worker's credential and returns who it works
// as: the credential's name and tenants, narrowed to --tenant when that
// flag was given. The token is compared by its hash (in constant time by
// the store) and never printed. The development token works on a SQLite
// file only: that file is one machine's, while a PostgreSQL database is
// shared by every machine that can reach it, where a credential anyone
// can guess is no credential.
func (c *cli) workerIdentity(ctx context.Context, eng *batch.Engine, token string, tenantFlag bool) (workerID, error) {
	if token == "" {
		token = os.Getenv("ROWFATE_WORKER_TOKEN")
	}
	t, err := c.database()
	if err != nil {
		return workerID{}, err
	}
	howTo := fmt.Sprintf("`batchctl worker-token create NAME%s` (add --all-tenants for a worker of every tenant)", c.hint())
	if token == "" && !t.postgres {
		// A SQLite file is local: whoever can write it needs no credential
		// to work it. The worker works the tenant of --tenant, as every
		// other command does.
		return workerID{name: "local", tenants: []string{c.global.tenant}}, nil
	}
	if token == "" {
		return workerID{}, usagef("a worker needs a credential on a shared database: --worker-token or ROWFATE_WORKER_TOKEN (make one with %s)", howTo)
	}
	id := workerID{name: "dev"}
	if token == devToken {
		if t.postgres {
			return workerID{}, usagef("the development worker token (dev) works on a local SQLite file only, not on %s: create a credential with %s and pass the token it prints with --worker-token or ROWFATE_WORKER_TOKEN", c.where(), howTo)
		}
		fmt.Fprintln(c.stderr, "WARNING: the development worker token is in use: no credential is checked and every tenant may be worked. Never use it in production; create one with `batchctl worker-token create`.")
	} else {
		id.hash = tokenHash(token)
		w, err := eng.WorkerAuth(ctx, batch.WorkerAuthParams{TokenHash: id.hash})
		if errors.Is(err, batch.ErrNotFound) {
			return workerID{}, errors.New("the worker token is not valid (unknown or revoked)")
		}
		if err != nil {
			return workerID{}, err
		}
		id.name, id.tenants = w.Name, w.TenantIDs
	}
	if tenantFlag {
		if len(id.tenants) > 0 && !slices.Contains(id.tenants, c.global.tenant) {
			return workerID{}, fmt.Errorf("worker %s may not work tenant %q (its tenants: %v)", id.name, c.global.tenant, id.tenants)
		}
		id.tenants = []string{c.global.tenant}
	}
	return id, nil
}
