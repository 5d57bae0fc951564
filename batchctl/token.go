package batchctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/server"
)

type tokenCreateOptions struct {
	role string
	name string
}

func (c *cli) tokenCommand() *cobra.Command {
	var o tokenCreateOptions
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API token for a tenant and print it, once",
		Long: `Create an API token for batchctl serve: it acts for --tenant, with the
--role admin (reads and acts: uploads, cancels, edits) or viewer (reads
only). The token is printed once, as the last line of standard output;
only its SHA-256 is stored. Send it as "Authorization: Bearer TOKEN", or
paste it into the admin page's log-in form.`,
		Example: `  batchctl token create --tenant acme --role admin --name ops
  TOKEN=$(batchctl token create --tenant acme --role viewer --name dashboard)`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.tokenCreate(cmd.Context(), o) },
	}
	create.Flags().StringVar(&o.role, "role", batchtype.RoleViewer, "admin (reads and acts) or viewer (reads only)")
	create.Flags().StringVar(&o.name, "name", "", "a name for the token, recorded in the history of what it changes (default: the role)")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's API tokens (never the tokens themselves)",
		Long:    `List --tenant's API tokens: id, name, role, when created and, for a revoked one, when revoked. It changes nothing.`,
		Example: `  batchctl token list --tenant acme -o json`,
		Args:    args(0, ""),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.tokenList(cmd.Context()) },
	}
	revoke := &cobra.Command{
		Use:     "revoke <id>",
		Short:   "Revoke an API token",
		Long:    `Revoke one of --tenant's API tokens by its id (batchctl token list): the next request made with it is refused.`,
		Example: `  batchctl token revoke 3 --tenant acme`,
		Args:    args(1, "<id>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil || id <= 0 {
				return usagef("token id %q is not a positive integer", a[0])
			}
			return c.tokenRevoke(cmd.Context(), id)
		},
	}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage the API tokens of batchctl serve",
		Long: `API tokens authenticate the HTTP API and the admin page of batchctl serve.
Each acts for one tenant, with a role: admin or viewer.`,
		Example: `  batchctl token create --tenant acme --role admin --name ops
  batchctl token list --tenant acme
  batchctl token revoke 3 --tenant acme`,
		RunE: func(*cobra.Command, []string) error {
			return usagef("token needs a subcommand: create, list or revoke")
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func (c *cli) tokenCreate(ctx context.Context, o tokenCreateOptions) error {
	if o.role != batchtype.RoleAdmin && o.role != batchtype.RoleViewer {
		return usagef("--role must be admin or viewer, not %q", o.role)
	}
	if o.name == "" {
		o.name = o.role
	}
	token, err := server.NewToken()
	if err != nil {
		return err
	}
	app, err := c.open(ctx, create)
	if err != nil {
		return err
	}
	defer app.close()
	t, err := app.engine.TokenCreate(ctx, batch.TokenCreateParams{TenantID: c.global.tenant, Name: o.name, Role: o.role, TokenHash: server.TokenHash(token)})
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"id": t.ID, "tenant_id": t.TenantID, "name": t.Name, "role": t.Role, "token": token})
	}
	fmt.Fprintf(c.stderr, "token %d for tenant %q, role %s (shown once; only its hash is stored):\n", t.ID, t.TenantID, t.Role)
	fmt.Fprintln(c.stdout, token)
	return nil
}

func (c *cli) tokenList(ctx context.Context) error {
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	ts, err := app.engine.Tokens(ctx, batch.TokensParams{TenantID: c.global.tenant})
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(toTokensJSON(ts))
	}
	if len(ts) == 0 {
		fmt.Fprintf(c.stdout, "no API tokens for tenant %q; create one: batchctl token create --role admin%s\n", c.global.tenant, c.hint())
		return nil
	}
	for _, t := range ts {
		state := "active"
		if t.RevokedAt != nil {
			state = "revoked " + t.RevokedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(c.stdout, "%d\t%s\t%s\tcreated %s\t%s\n", t.ID, t.Name, t.Role, t.CreatedAt.Format("2006-01-02 15:04"), state)
	}
	return nil
}

func (c *cli) tokenRevoke(ctx context.Context, id int64) error {
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if err := app.engine.TokenRevoke(ctx, batch.TokenRevokeParams{TenantID: c.global.tenant, ID: id}); err != nil {
		if errors.Is(err, batch.ErrNotFound) {
			return fmt.Errorf("tenant %q has no token %d (batchctl token list%s)", c.global.tenant, id, c.hint())
		}
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"id": id, "revoked": true})
	}
	fmt.Fprintf(c.stdout, "token %d revoked\n", id)
	return nil
}
