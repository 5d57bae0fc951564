package batchctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/webhook/outbox"
)

// deliveryStatuses are the values of webhook deliveries --status.
var deliveryStatuses = []string{batchtype.DeliveryPending, batchtype.DeliveryDelivered, batchtype.DeliveryDead}

type deliveriesOptions struct {
	status string
	limit  int
	before int64
}

func (c *cli) webhookCommand() *cobra.Command {
	var allowPrivate bool
	add := &cobra.Command{
		Use:   "add <url>",
		Short: "Add a webhook endpoint for a tenant and print its signing secret, once",
		Long: `Add a webhook endpoint for --tenant: from now on, every batch of the tenant
that finishes or is cancelled queues one signed POST to <url> (an http or
https URL with a host and no user info), which batchctl serve sends.

The URL must point at a public address: a loopback, private, link-local or
otherwise non-public host (127.0.0.1, 10.0.0.0/8, 169.254.169.254, ::1,
localhost) is refused unless --allow-private, and batchctl serve delivers
to such an address only with --allow-private-webhooks (it checks the
address a name resolves to at each connection).

A new signing secret (whsec_ and the base64 of 32 random bytes) is made
for the endpoint and printed once, as the last line of standard output;
the endpoint's id goes to standard error. Receivers verify each delivery
with it (Standard Webhooks: webhook-id, webhook-timestamp and
webhook-signature headers).`,
		Example: `  batchctl webhook add https://hooks.example.com/rowfate --tenant acme
  SECRET=$(batchctl webhook add https://hooks.example.com/rowfate --tenant acme)
  batchctl webhook add https://hooks.example.com/rowfate -o json`,
		Args: args(1, "<url>"),
		RunE: func(cmd *cobra.Command, a []string) error { return c.webhookAdd(cmd.Context(), a[0], allowPrivate) },
	}
	add.Flags().BoolVar(&allowPrivate, "allow-private", false, "accept a URL at a loopback, private, link-local or other non-public address (serve delivers there with --allow-private-webhooks only)")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's webhook endpoints (never their secrets)",
		Long:    `List --tenant's enabled webhook endpoints: id, URL and when added. It changes nothing.`,
		Example: `  batchctl webhook list --tenant acme -o json`,
		Args:    args(0, ""),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.webhookList(cmd.Context()) },
	}
	rm := &cobra.Command{
		Use:   "rm <id>",
		Short: "Disable a webhook endpoint",
		Long: `Disable one of --tenant's webhook endpoints by its id (batchctl webhook
list): no new delivery is queued for it. Deliveries already queued are
still tried, and every delivery stays listed.`,
		Example: `  batchctl webhook rm 3 --tenant acme`,
		Args:    args(1, "<id>"),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil || id <= 0 {
				return usagef("webhook endpoint id %q is not a positive integer", a[0])
			}
			return c.webhookRemove(cmd.Context(), id)
		},
	}
	var o deliveriesOptions
	deliveries := &cobra.Command{
		Use:   "deliveries",
		Short: "List the tenant's webhook deliveries, newest first",
		Long: `List --tenant's webhook deliveries, newest first: the batch and event, the
endpoint, the status (pending, delivered, or dead once its attempts ran
out), the attempts made, the endpoint's last answer and when the next
attempt is due. It changes nothing.`,
		Example: `  batchctl webhook deliveries --tenant acme
  batchctl webhook deliveries --status dead -o json`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.webhookDeliveries(cmd.Context(), o) },
	}
	deliveries.Flags().StringVar(&o.status, "status", "", "only deliveries in this status: pending, delivered or dead")
	deliveries.Flags().IntVar(&o.limit, "limit", 50, "at most this many deliveries")
	deliveries.Flags().Int64Var(&o.before, "before", 0, "only deliveries with an id below this one (the next page)")
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Manage the tenant's outgoing webhooks",
		Long: `Outgoing webhooks tell a tenant's endpoints when its batches finish or are
cancelled (batch.finished, batch.cancelled). Each delivery is queued in the
transaction that ends the batch and sent by batchctl serve, signed in the
Standard Webhooks format and retried with backoff until the endpoint
answers 2xx, or dead after its last attempt.`,
		Example: `  batchctl webhook add https://hooks.example.com/rowfate --tenant acme
  batchctl webhook list --tenant acme
  batchctl webhook deliveries --tenant acme --status dead
  batchctl webhook rm 3 --tenant acme`,
		GroupID: "admin",
		RunE: func(*cobra.Command, []string) error {
			return usagef("webhook needs a subcommand: add, list, rm or deliveries")
		},
	}
	cmd.AddCommand(add, list, rm, deliveries)
	return cmd
}

// endpointURL checks an endpoint's address as the HTTP API does.
func endpointURL(raw string, allowPrivate bool) (string, error) {
	u, err := outbox.CheckURL(raw, allowPrivate)
	switch {
	case errors.Is(err, outbox.ErrDestinationNotAllowed):
		return "", usagef("webhook URL %q: %v; add it with --allow-private if the service may post into its own network (and serve it with --allow-private-webhooks)", raw, err)
	case err != nil:
		return "", usagef("webhook URL %q: %v", raw, err)
	}
	return u, nil
}

func (c *cli) webhookAdd(ctx context.Context, raw string, allowPrivate bool) error {
	u, err := endpointURL(raw, allowPrivate)
	if err != nil {
		return err
	}
	secret := outbox.NewSecret()
	app, err := c.open(ctx, create)
	if err != nil {
		return err
	}
	defer app.close()
	ep, err := app.engine.EndpointCreate(ctx, batch.EndpointCreateParams{TenantID: c.global.tenant, URL: u, Secret: secret})
	if err != nil {
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"id": ep.ID, "tenant_id": ep.TenantID, "url": ep.URL, "created_at": ep.CreatedAt, "secret": secret})
	}
	fmt.Fprintf(c.stderr, "webhook endpoint %d for tenant %q: %s; its signing secret (shown once):\n", ep.ID, ep.TenantID, ep.URL)
	fmt.Fprintln(c.stdout, secret)
	return nil
}

func (c *cli) webhookList(ctx context.Context) error {
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	eps, err := app.engine.Endpoints(ctx, batch.EndpointsParams{TenantID: c.global.tenant})
	if err != nil {
		return err
	}
	for i := range eps {
		eps[i].Secret = "" // shown once, at add
	}
	if c.global.output == "json" {
		return c.json(toEndpointsJSON(eps))
	}
	if len(eps) == 0 {
		fmt.Fprintf(c.stdout, "no webhook endpoints for tenant %q; add one: batchctl webhook add https://...%s\n", c.global.tenant, c.hint())
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tADDED")
	for _, e := range eps {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", e.ID, e.URL, e.CreatedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func (c *cli) webhookRemove(ctx context.Context, id int64) error {
	app, err := c.open(ctx, readWrite)
	if err != nil {
		return err
	}
	defer app.close()
	if err := app.engine.EndpointDisable(ctx, batch.EndpointDisableParams{TenantID: c.global.tenant, ID: id}); err != nil {
		if errors.Is(err, batch.ErrNotFound) {
			return fmt.Errorf("tenant %q has no enabled webhook endpoint %d (batchctl webhook list%s)", c.global.tenant, id, c.hint())
		}
		return err
	}
	if c.global.output == "json" {
		return c.json(map[string]any{"id": id, "disabled": true})
	}
	fmt.Fprintf(c.stdout, "webhook endpoint %d disabled; deliveries already queued for it are still tried\n", id)
	return nil
}

func (c *cli) webhookDeliveries(ctx context.Context, o deliveriesOptions) error {
	if o.status != "" && !slices.Contains(deliveryStatuses, o.status) {
		return usagef("--status must be pending, delivered or dead, not %q", o.status)
	}
	if o.limit <= 0 {
		return usagef("--limit must be 1 or more, not %d", o.limit)
	}
	if o.before < 0 {
		return usagef("--before must be a delivery id, not %d", o.before)
	}
	app, err := c.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer app.close()
	// One past the limit tells whether more follow.
	ds, err := app.engine.Deliveries(ctx, batch.DeliveriesParams{TenantID: c.global.tenant, Status: o.status, BeforeID: o.before, Limit: o.limit + 1})
	if err != nil {
		return err
	}
	more := len(ds) > o.limit
	if more {
		ds = ds[:o.limit]
	}
	if c.global.output == "json" {
		return c.json(toDeliveriesJSON(ds))
	}
	if len(ds) == 0 {
		fmt.Fprintln(c.stdout, "no webhook deliveries")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tBATCH\tEVENT\tENDPOINT\tSTATUS\tATTEMPTS\tLAST ANSWER\tWHEN")
	for _, d := range ds {
		answer := "-"
		switch {
		case d.LastError != "":
			answer = d.LastError
		case d.LastStatus != 0:
			answer = strconv.Itoa(d.LastStatus)
		}
		if r := []rune(answer); len(r) > 80 {
			answer = string(r[:77]) + "..."
		}
		when := "created " + d.CreatedAt.Format(time.DateTime)
		switch {
		case d.DoneAt != nil:
			when = "done " + d.DoneAt.Format(time.DateTime)
		case d.Status == batchtype.DeliveryPending && d.NextAttemptAt != nil:
			when = "next " + d.NextAttemptAt.Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%d\t%d\tbatch.%s\t%d\t%s\t%d\t%s\t%s\n", d.ID, d.BatchID, d.EventType, d.EndpointID, d.Status, d.Attempts, answer, when)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more {
		status := ""
		if o.status != "" {
			status = " --status " + o.status
		}
		fmt.Fprintf(c.stdout, "more deliveries follow (use --limit/--before): batchctl webhook deliveries%s --before %d --limit %d%s\n",
			status, ds[len(ds)-1].ID, o.limit, c.hint())
	}
	return nil
}
