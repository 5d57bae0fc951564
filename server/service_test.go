package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/server"
	"github.com/rowfate/rowfate/store/sqlite"
)

// TestServiceRunsAndStops: a Service on SQLite serves the API, works an
// uploaded batch with its in-process workers, serves metrics, and Run
// returns nil once its context ends.
func TestServiceRunsAndStops(t *testing.T) {
	t.Parallel()
	s, reg, files := serviceParts(t)
	svc, err := server.NewService(server.ServiceConfig{
		Store: s, Registry: reg, Rate: 100, Metrics: true, Workers: 2, LeaseDuration: time.Minute,
		Server: server.Config{Files: files, TmpDir: t.TempDir(), Auth: server.NewStaticToken("tok", "acme")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("kind", "customers")
	part, _ := mw.CreateFormFile("file", "c.csv")
	_, _ = part.Write([]byte("email,name,signup_date\na@example.com,A,2024-01-02\nb@example.com,B,2024-01-03\n"))
	_ = mw.Close()
	call := func(method, path string, body *bytes.Buffer, contentType string) *http.Response {
		t.Helper()
		if body == nil {
			body = &bytes.Buffer{}
		}
		req, _ := http.NewRequest(method, base+path, body)
		req.Header.Set("Authorization", "Bearer tok")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := call(http.MethodPost, "/v1/batches", &body, mw.FormDataContentType())
	var b server.BatchView
	_ = json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/batches: %s", resp.Status)
	}
	testenv.Until(t, func() bool {
		resp := call(http.MethodGet, fmt.Sprintf("/v1/batches/%d", b.ID), nil, "")
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&b)
		return b.Status == "finished"
	}, func() string { return fmt.Sprintf("the batch is %s, %v", b.Status, b.Counts) })
	if b.Counts["succeeded"] != 2 {
		t.Fatalf("counts %v, want 2 succeeded by the service's workers", b.Counts)
	}
	resp = call(http.MethodGet, "/metrics", nil, "")
	var m bytes.Buffer
	_, _ = m.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(m.String(), `rowfate_row_outcomes_total{kind="customers",state="succeeded"} 2`) {
		t.Fatalf("metrics do not count the service's outcomes:\n%s", m.String())
	}
	cancel()
	if err, _ := testenv.Receive(t, done, func() string { return "Run to return" }); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// serviceParts returns a SQLite store with the built-in kinds' tables,
// their registry and a file store: what a Service is made of.
func serviceParts(t *testing.T) (*sqlite.Store, *batch.Registry, *filestore.Store) {
	t.Helper()
	s := teststore.SQLite(t)
	cfg := processors.Config{DB: s.DB(), Dialect: customers.SQLite}
	if err := processors.EnsureSchema(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	reg, err := processors.Registry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s, reg, files
}
