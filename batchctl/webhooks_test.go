package batchctl

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rowfate/rowfate/store/sqlite"
	"github.com/rowfate/rowfate/webhook"
	"github.com/rowfate/rowfate/webhook/outbox"
)

// jsonDelivery is the shape of webhook deliveries -o json scripts rely on.
type jsonDelivery struct {
	ID         int64  `json:"id"`
	TenantID   string `json:"tenant_id"`
	EndpointID int64  `json:"endpoint_id"`
	BatchID    int64  `json:"batch_id"`
	EventType  string `json:"event_type"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status"`
}

// TestWebhookCommands: add prints the secret once (and only there), list
// and rm manage the endpoints, deliveries lists what a finished or
// cancelled batch queued, and a sender signs them with the secret add
// printed.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	c := setup(t)
	var (
		mu       sync.Mutex
		secret   string
		received []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		id, err := webhook.Verify(r.Header, body, []string{secret}, nil)
		if err != nil {
			t.Errorf("a delivery does not verify with the secret add printed: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		received = append(received, id)
	}))
	t.Cleanup(receiver.Close)

	// The receivers are on 127.0.0.1: allowed by --allow-private only.
	r := c.run("webhook", "add", receiver.URL+"/hook", "--tenant", "acme", "--allow-private")
	secret = strings.TrimSpace(r.stdout)
	if key, err := webhook.DecodeSecret(secret); r.code != exitOK || err != nil || len(key) != 32 || !strings.HasPrefix(secret, "whsec_") ||
		strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "webhook endpoint 1 for tenant \"acme\"") {
		t.Fatalf("add: %s", r)
	}
	var added struct {
		ID     int64  `json:"id"`
		URL    string `json:"url"`
		Secret string `json:"secret"`
	}
	// Nothing listens on port 1: its deliveries get no answer.
	c.runJSON(exitOK, &added, "webhook", "add", "http://127.0.0.1:1/rowfate", "--tenant", "acme", "-o", "json", "--allow-private")
	if added.ID != 2 || added.URL != "http://127.0.0.1:1/rowfate" || added.Secret == "" || added.Secret == secret {
		t.Fatalf("add -o json: %+v", added)
	}

	r = c.run("webhook", "list", "--tenant", "acme")
	if r.code != exitOK || !strings.Contains(r.stdout, receiver.URL+"/hook") || !strings.Contains(r.stdout, "http://127.0.0.1:1/rowfate") ||
		strings.Contains(r.stdout, "whsec_") {
		t.Fatalf("list: %s", r)
	}
	r = c.run("webhook", "list", "--tenant", "acme", "-o", "json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 2 || strings.Contains(r.stdout, "secret") || strings.Contains(r.stdout, "whsec_") {
		t.Fatalf("list -o json: %s (%v)", r, err)
	}
	if r := c.run("webhook", "list", "--tenant", "globex"); r.code != exitOK || !strings.Contains(r.stdout, "no webhook endpoints") {
		t.Errorf("another tenant's list: %s", r)
	}

	// Nothing is queued before a batch ends; a finished batch queues one
	// delivery per endpoint.
	if r := c.run("webhook", "deliveries", "--tenant", "acme"); r.code != exitOK || !strings.Contains(r.stdout, "no webhook deliveries") {
		t.Fatalf("deliveries before any batch: %s", r)
	}
	if r := c.run("import", "customers", fixture, "--tenant", "acme"); r.code != exitRows || !strings.Contains(r.stdout, "finished") {
		t.Fatalf("import: %s", r)
	}
	var ds []jsonDelivery
	c.runJSON(exitOK, &ds, "webhook", "deliveries", "--tenant", "acme", "-o", "json")
	if len(ds) != 2 || ds[0].BatchID != 1 || ds[0].EventType != "finished" || ds[0].Status != "pending" || ds[0].Attempts != 0 || ds[0].TenantID != "acme" {
		t.Fatalf("deliveries: %+v", ds)
	}
	r = c.run("webhook", "deliveries", "--tenant", "acme")
	if r.code != exitOK || strings.Count(r.stdout, "batch.finished") != 2 || !strings.Contains(r.stdout, "pending") || strings.Contains(r.stdout, "whsec_") {
		t.Fatalf("deliveries: %s", r)
	}
	if r := c.run("webhook", "deliveries", "--tenant", "acme", "--limit", "1"); strings.Count(r.stdout, "batch.finished") != 1 ||
		!strings.Contains(r.stdout, "batchctl webhook deliveries --before 2 --limit 1 --database "+c.database+" --tenant acme") {
		t.Errorf("deliveries --limit 1: %s", r)
	}
	if r := c.run("webhook", "deliveries"); !strings.Contains(r.stdout, "no webhook deliveries") {
		t.Errorf("another tenant's deliveries: %s", r)
	}

	// rm: no new delivery for the endpoint.
	if r := c.run("webhook", "rm", "2", "--tenant", "globex"); r.code != exitError || !strings.Contains(r.stderr, "has no enabled webhook endpoint 2") {
		t.Errorf("rm of another tenant's endpoint: %s", r)
	}
	if r := c.run("webhook", "rm", "2", "--tenant", "acme"); r.code != exitOK || !strings.Contains(r.stdout, "webhook endpoint 2 disabled") {
		t.Fatalf("rm: %s", r)
	}
	if r := c.run("webhook", "rm", "2", "--tenant", "acme"); r.code != exitError {
		t.Errorf("rm twice: %s", r)
	}
	if r := c.run("webhook", "list", "--tenant", "acme"); strings.Contains(r.stdout, "127.0.0.1:1/") || !strings.Contains(r.stdout, receiver.URL) {
		t.Errorf("list after rm: %s", r)
	}
	c.run("import", "customers", fixture, "--tenant", "acme", "--no-work", "--new-batch")
	if r := c.run("cancel", "2", "--tenant", "acme"); r.code != exitOK {
		t.Fatalf("cancel: %s", r)
	}
	c.runJSON(exitOK, &ds, "webhook", "deliveries", "--tenant", "acme", "-o", "json")
	if len(ds) != 3 || ds[0].BatchID != 2 || ds[0].EventType != "cancelled" || ds[0].EndpointID != 1 {
		t.Fatalf("deliveries after rm and a cancel: %+v", ds)
	}

	// What batchctl serve runs: the endpoint that answers gets its two,
	// signed with the secret add printed.
	s, err := sqlite.Open(c.database)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := outbox.New(outbox.Config{Store: s, MaxAttempts: 1, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := snd.SendOnce(context.Background()); n != 3 || err != nil {
		t.Fatalf("SendOnce = %d, %v", n, err)
	}
	s.Close()
	mu.Lock()
	if len(received) != 2 {
		t.Errorf("the receiver got %v", received)
	}
	mu.Unlock()
	c.runJSON(exitOK, &ds, "webhook", "deliveries", "--tenant", "acme", "--status", "delivered", "-o", "json")
	if len(ds) != 2 || ds[0].LastStatus != 200 || ds[0].Attempts != 1 {
		t.Fatalf("delivered: %+v", ds)
	}
	// The endpoint on port 1: a connection that could not be made, and
	// nothing of the system's error text.
	if r := c.run("webhook", "deliveries", "--tenant", "acme", "--status", "dead"); r.code != exitOK || !strings.Contains(r.stdout, "dead") ||
		!strings.Contains(r.stdout, "no answer: could not connect") || strings.Contains(r.stdout, "refused") {
		t.Errorf("deliveries --status dead (the endpoint on port 1): %s", r)
	}
}

// TestWebhookUsage: a URL that is not http(s) with a host, and other bad
// command lines, are usage errors (exit 2) that store nothing.
func TestWebhookUsage(t *testing.T) {
	t.Parallel()
	c := setup(t)
	for _, bad := range [][]string{
		{"webhook", "add", "ftp://hooks.example.com/x"},
		{"webhook", "add", "hooks.example.com/x"},
		{"webhook", "add", "https://"},
		{"webhook", "add", "https://user:pass@hooks.example.com/"},
		{"webhook", "add", "http://[::1"},
		{"webhook", "add", "http://127.0.0.1:9/x"},
		{"webhook", "add", "http://[::1]/x"},
		{"webhook", "add", "http://10.0.0.1/x"},
		{"webhook", "add", "http://169.254.169.254/latest"},
		{"webhook", "add", "http://localhost:8080/x"},
		{"webhook", "add"},
		{"webhook", "rm", "x"},
		{"webhook", "rm", "0"},
		{"webhook", "deliveries", "--status", "failed"},
		{"webhook", "deliveries", "--limit", "0"},
		{"webhook"},
	} {
		if r := c.run(bad...); r.code != exitUsage {
			t.Errorf("%v: %s", bad, r)
		}
	}
	r := c.run("webhook", "add", "ftp://hooks.example.com/x")
	if !strings.Contains(r.stderr, "want an http(s) URL with a host") {
		t.Errorf("the refusal does not say what is wanted: %s", r)
	}
	if r := c.run("webhook", "add", "http://127.0.0.1:9/x"); !strings.Contains(r.stderr, "not a public address") || !strings.Contains(r.stderr, "--allow-private") {
		t.Errorf("the refusal of a loopback URL does not say why, nor how to allow it: %s", r)
	}
	if r := c.run("webhook", "list"); r.code != exitError || !strings.Contains(r.stderr, "no such database") {
		t.Errorf("a refused add created the database: %s", r)
	}
	for _, sub := range []string{"add", "list", "rm", "deliveries"} {
		r := c.run("webhook", sub, "--help")
		if r.code != exitOK || !strings.Contains(r.stdout, "Examples:\n") {
			t.Errorf("webhook %s --help: %s", sub, r)
		}
	}
	if r := c.run("webhook", "deliveries", "--help"); !strings.Contains(r.stdout, "--status") || !strings.Contains(r.stdout, "--before") {
		t.Errorf("deliveries --help does not document its flags: %s", r)
	}
}
