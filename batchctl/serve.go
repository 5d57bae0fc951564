package batchctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/server"
)

type serveOptions struct {
	addr          string
	token         string
	insecure      bool
	origins       []string
	rate          float64
	retention     time.Duration
	compact       bool
	workers       int
	lease         time.Duration
	files         string
	fileRetention time.Duration
	purgeEvery    time.Duration
	maxUpload     string
	hookSecrets   []string
	hookPrefixes  []string
	metrics       bool
	tenantRole    string
	workerToken   string
	allowPrivate  bool
}

func (c *cli) serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API, the admin page and live progress; work the batches",
		Long: `Serve Rowfate as a service: the JSON API under /v1 (uploads, batches, rows,
actions, downloads, webhooks; its OpenAPI document at /v1/openapi.json), the
admin page at /, batches' live progress over websockets, /livez, /readyz
and /metrics. With --workers (2 by default) it also works the batches, as
batchctl worker does; --workers 0 leaves them to worker processes.

Workers: the in-process workers need a worker credential, as batchctl
worker does (--worker-token or ROWFATE_WORKER_TOKEN; make one with
batchctl worker-token create), and work only its tenants. serve refuses
to start without one, unless --workers 0 or --insecure-dev (whose workers
work every tenant). --tenant names the bootstrap token's tenant, not the
workers'. A credential revoked while serve runs stops its workers (the
rows they hold go back); the API goes on serving.

Authentication: every API request carries an API token (batchctl token
create --tenant T --role admin|viewer) as "Authorization: Bearer TOKEN", or,
from a browser's websocket, as the subprotocol "bearer.TOKEN" next to
"rowfate.v1". A token acts for its tenant (another tenant's batch is not
found) and its role (a viewer reads, an admin acts). --token adds one
bootstrap admin token for --tenant (default $ROWFATE_SERVE_TOKEN).
--insecure-dev serves anyone who can reach --addr as an admin of --tenant,
for a developer's machine only.

Files: uploads stream to --files (never whole in memory) and are kept for
--file-retention, so that re-runs and the "original file" download work
from the service; exports are kept there too. Each file is kept under its
tenant, content-addressed by SHA-256 within it, and looked up under the
caller's tenant only; a preview hands out an opaque upload id, never the
digest.

Webhooks: batches that finish or are cancelled are announced to the
tenant's endpoints (batchctl webhook add), signed in the Standard Webhooks
format, from a durable outbox with bounded retries. Endpoints must be at
public addresses: one at a loopback, private, link-local or otherwise
non-public address is refused when added and at each connection (the
address a name resolves to is checked as it is dialled), unless
--allow-private-webhooks, for a service whose tenants may all reach its
network. POST /v1/hooks/import starts an import from a signed request
(--hook-secret TENANT=whsec_..., several per tenant while rotating) whose
file is fetched from under a --hook-fetch-prefix (compared, and fetched,
in canonical form: dot segments resolved, ambiguous encodings refused).

Tenants in the database: on PostgreSQL, --tenant-role ROLE runs every
request's statements as ROLE (created if missing and granted the tenant
tables only) with app.tenant_id set to the token's tenant, for that
transaction: the row-level security policies then show and let it write
that tenant's rows only, underneath the queries' own tenant filters.
Workers, the webhook sender and metrics run as the connection's user.

Browsers may open a stream from the server's own origin and from the
--allowed-origin ones, nothing else. On PostgreSQL every serve process hears
of events at once (LISTEN) and polls each second as well; on SQLite serve
polls the file.`,
		Example: `  batchctl token create --tenant acme --role admin --name ops
  ROWFATE_WORKER_TOKEN=rfw_... batchctl serve --addr :8080 --database postgres://db/app --tenant acme
  batchctl serve --workers 0 --database postgres://db/app
  batchctl serve --insecure-dev
  batchctl serve --hook-secret acme=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw --hook-fetch-prefix https://files.example.com/`,
		Args: args(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.runServe(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&o.token, "token", "", "a bootstrap admin token for --tenant, besides the stored API tokens (default $ROWFATE_SERVE_TOKEN)")
	f.BoolVar(&o.insecure, "insecure-dev", false, "serve without a token: anyone who can reach --addr acts as an admin of --tenant (development only)")
	f.StringArrayVar(&o.origins, "allowed-origin", nil, "a browser origin (https://host[:port]) whose pages may open streams; repeatable")
	f.Float64Var(&o.rate, "rate", 4, "live messages a second per stream, at most")
	f.DurationVar(&o.retention, "event-retention", 7*24*time.Hour, "trim events older than this (0 keeps them)")
	f.BoolVar(&o.compact, "compact-finished", false, "trim every event of a finished or cancelled batch but its last")
	f.IntVar(&o.workers, "workers", 2, "concurrent workers in this process (0: leave the batches to batchctl worker processes)")
	f.StringVar(&o.workerToken, "worker-token", "", "the in-process workers' credential: they work its tenants only (default $ROWFATE_WORKER_TOKEN)")
	f.BoolVar(&o.allowPrivate, "allow-private-webhooks", false, "let webhook endpoints be at loopback, private, link-local and other non-public addresses")
	f.DurationVar(&o.lease, "lease", 30*time.Second, "how long a claimed chunk is this process's without a renewal")
	f.StringVar(&o.files, "files", "", "folder of kept uploads and exports (default: beside a SQLite file, else ./rowfate-files)")
	f.DurationVar(&o.fileRetention, "file-retention", 30*24*time.Hour, "remove kept files not used for this long (0 keeps them)")
	f.DurationVar(&o.purgeEvery, "purge-every", 10*time.Minute, "apply the tenants' retention policies (batchctl retention) this often (0: never)")
	f.StringVar(&o.maxUpload, "max-upload", "1GiB", "largest file an upload may have (bytes, or with KB, MB, GB, KiB, MiB, GiB)")
	f.StringArrayVar(&o.hookSecrets, "hook-secret", nil, "TENANT=whsec_... a secret that signs incoming import webhooks for a tenant; repeatable (default $ROWFATE_HOOK_SECRETS, comma-separated)")
	f.StringArrayVar(&o.hookPrefixes, "hook-fetch-prefix", nil, "a URL prefix incoming webhooks may fetch files from; repeatable")
	f.BoolVar(&o.metrics, "metrics", true, "serve Prometheus metrics at /metrics")
	f.StringVar(&o.tenantRole, "tenant-role", "", "PostgreSQL: run each request's statements as this role (created if missing, never the tables' owner) under row-level security for its tenant")
	return cmd
}

// parseSize reads a byte size: a number, optionally with a decimal (KB,
// MB, GB) or binary (KiB, MiB, GiB) unit.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	v := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (512MiB, 2GB, 1048576)", s)
	}
	return n * mult, nil
}

// hookSecrets reads TENANT=SECRET pairs.
func hookSecrets(pairs []string) (map[string][]string, error) {
	if len(pairs) == 0 {
		if env := os.Getenv("ROWFATE_HOOK_SECRETS"); env != "" {
			pairs = strings.Split(env, ",")
		}
	}
	out := map[string][]string{}
	for _, p := range pairs {
		tenant, secret, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || tenant == "" || secret == "" {
			return nil, usagef("--hook-secret %q: want TENANT=whsec_...", p)
		}
		out[tenant] = append(out[tenant], secret)
	}
	return out, nil
}

func (c *cli) runServe(ctx context.Context, o serveOptions) error {
	if o.token == "" {
		o.token = os.Getenv("ROWFATE_SERVE_TOKEN")
	}
	if o.token != "" && o.insecure {
		return usagef("--insecure-dev and a token (--token or $ROWFATE_SERVE_TOKEN) exclude each other")
	}
	if o.rate <= 0 {
		return usagef("--rate must be above 0, not %v", o.rate)
	}
	if o.workers < 0 {
		return usagef("--workers must be 0 or more, not %d", o.workers)
	}
	maxUpload, err := parseSize(o.maxUpload)
	if err != nil {
		return usagef("--max-upload: %v", err)
	}
	secrets, err := hookSecrets(o.hookSecrets)
	if err != nil {
		return err
	}
	c.lease = o.lease
	c.tenantRole = o.tenantRole
	if t, err := c.database(); err == nil && !t.postgres && o.tenantRole != "" {
		return usagef("--tenant-role is for PostgreSQL: SQLite has no roles (one process owns the file)")
	}
	// The in-process workers claim chunks as any worker does, and so need
	// a worker's credential; without one they would work every tenant.
	needWorker := o.workers > 0 && (!o.insecure || o.workerToken != "" || os.Getenv("ROWFATE_WORKER_TOKEN") != "")
	if needWorker && o.workerToken == "" && os.Getenv("ROWFATE_WORKER_TOKEN") == "" {
		return usagef("serve runs %d workers, and workers need a credential: --worker-token or ROWFATE_WORKER_TOKEN (make one with `batchctl worker-token create NAME%s`), "+
			"or --workers 0 to leave the batches to batchctl worker processes", o.workers, c.hint())
	}
	app, err := c.openPatiently(ctx, create)
	if err != nil {
		return err
	}
	defer app.close()
	// Without a credential (--insecure-dev), the workers work every
	// tenant, as the development worker token does. --tenant is the
	// bootstrap token's: it does not narrow the workers.
	worker := workerID{name: "serve"}
	if needWorker {
		if worker, err = c.workerIdentity(ctx, app.engine, o.workerToken, false); err != nil {
			return err
		}
	}
	auth := c.serveAuth(app.engine, o)
	dir := c.filesDir(o.files)
	files, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	svc, err := server.NewService(server.ServiceConfig{
		Store: app.store, Registry: app.engine.Registry(), Logger: c.logger, Rate: o.rate, Metrics: o.metrics,
		Server: server.Config{Files: files, MaxUpload: maxUpload, Auth: auth, AllowedOrigins: o.origins,
			Hooks: server.HooksConfig{Secrets: secrets, FetchPrefixes: o.hookPrefixes}, AllowPrivateWebhooks: o.allowPrivate},
		Workers: o.workers, WorkerName: worker.name, WorkerTenants: worker.tenants, LeaseDuration: o.lease,
		Work:           c.serveWork(worker, o.lease),
		EventRetention: o.retention, CompactFinished: o.compact, FileRetention: o.fileRetention, PurgeEvery: purgeEvery(o.purgeEvery),
		AllowPrivateWebhooks: o.allowPrivate,
		ReloadKinds:          func(ctx context.Context) (int, error) { return c.loadKinds(ctx, app) },
		ReloadEvery:          kindReload,
	})
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	if o.insecure {
		fmt.Fprintf(c.stderr, "WARNING: --insecure-dev: no token is checked; anyone who can reach %s acts as an admin of tenant %q\n", ln.Addr(), c.global.tenant)
	}
	abs, _ := filepath.Abs(dir)
	workers := fmt.Sprintf("%d workers", o.workers)
	switch {
	case o.workers == 0:
	case len(worker.tenants) > 0:
		workers += fmt.Sprintf(" as %s for tenants %s", worker.name, strings.Join(worker.tenants, ", "))
	default:
		workers += fmt.Sprintf(" as %s for every tenant", worker.name)
	}
	fmt.Fprintf(c.stderr, "serving on http://%s (%s, files in %s, %s)\n", ln.Addr(), c.where(), abs, workers)
	err = svc.Run(ctx, ln)
	if ctx.Err() != nil {
		fmt.Fprintln(c.stderr, "stopped")
		return nil
	}
	return err
}

// serveWork runs serve's workers as worker: the credential is checked
// again while they run, and a revoked one stops them (their rows go
// back) while the service goes on serving without workers.
func (c *cli) serveWork(worker workerID, lease time.Duration) func(context.Context, *batch.Engine, batch.WorkParams) error {
	return func(ctx context.Context, eng *batch.Engine, p batch.WorkParams) error {
		_, err := c.workAs(ctx, eng, worker, lease, p)
		var revoked *revokedError
		if errors.As(err, &revoked) && ctx.Err() == nil {
			fmt.Fprintf(c.stderr, "the workers stopped: %v; serving goes on without workers\n", revoked)
			return nil
		}
		return err
	}
}

// serveAuth is who serve lets in: the stored API tokens, and the
// bootstrap token (--token) or anyone (--insecure-dev) as an admin of
// --tenant.
func (c *cli) serveAuth(eng *batch.Engine, o serveOptions) server.Authenticator {
	var auth server.Authenticator = server.StoredTokens{Source: eng}
	switch {
	case o.token != "":
		auth = server.AnyOf{server.NewStaticToken(o.token, c.global.tenant), auth}
	case o.insecure:
		auth = server.Insecure{TenantID: c.global.tenant}
	}
	return auth
}

// filesDir is the folder of kept files: --files, else beside a SQLite
// file, else ./rowfate-files.
func (c *cli) filesDir(flag string) string {
	if flag != "" {
		return flag
	}
	if t, _ := c.database(); !t.postgres {
		return t.path + ".files"
	}
	return "rowfate-files"
}

// purgeEvery maps --purge-every to server.ServiceConfig.PurgeEvery: 0 is
// never there, the default here.
func purgeEvery(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
