package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/server"
)

// TestStreamClosedOnRevocation: an open event stream whose API token is
// revoked in the store is closed with CloseRevoked within a
// re-authentication interval; a stream of a token that stays valid goes
// on streaming.
func TestStreamClosedOnRevocation(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(testing.TB, apiOptions) *apiHarness{"SQLite": sqliteAPI, "PostgreSQLTenantRole": postgresRLSAPI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := mk(t, apiOptions{})
			ctx := context.Background()
			ss := h.store.(driver.ServiceStore)
			tok, err := server.NewToken()
			if err != nil {
				t.Fatal(err)
			}
			created, err := ss.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "acme", Name: "watcher", Role: batchtype.RoleViewer, TokenHash: server.TokenHash(tok)})
			if err != nil {
				t.Fatal(err)
			}
			b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "customers.csv", fixture(t)), http.StatusCreated)
			url := "ws" + strings.TrimPrefix(h.srv.URL, "http") + fmt.Sprintf("/v1/batches/%d/events", b.ID)
			dial := func(hdr http.Header) *websocket.Conn {
				t.Helper()
				c, resp, err := websocketDialer.Dial(url, hdr)
				if err != nil {
					t.Fatalf("dial: %v (%s)", err, body(resp))
				}
				t.Cleanup(func() { c.Close() })
				_ = c.SetReadDeadline(time.Now().Add(testenv.Patience(t)))
				if m, err := read(t, c); err != nil || m.Event == nil || m.Event.Seq != 1 {
					t.Fatalf("first message %+v, %v", m, err)
				}
				return c
			}
			// The token to revoke in a header; the one that stays as a
			// browser sends it, in the subprotocol.
			revoked := dial(http.Header{"Authorization": {"Bearer " + tok}})
			kept := dial(http.Header{"Sec-WebSocket-Protocol": {"rowfate.v1, bearer." + viewerA}})

			if err := ss.TokenRevoke(ctx, "acme", created.ID); err != nil {
				t.Fatal(err)
			}
			for {
				m, err := read(t, revoked)
				if err == nil {
					t.Logf("after the revocation: %+v", m)
					continue
				}
				if code := closeCode(err); code != server.CloseRevoked {
					t.Fatalf("the revoked token's stream ended with %v (close %d), want close %d", err, code, server.CloseRevoked)
				}
				break
			}

			// The other stream is live: it receives the pause that
			// follows.
			if p := h.batchOf(h.postJSON(fmt.Sprintf("/v1/batches/%d/pause", b.ID), adminA, nil), http.StatusOK); !p.Paused {
				t.Fatalf("pause: %+v", p)
			}
			for {
				m, err := read(t, kept)
				if err != nil {
					t.Fatalf("the stream of a valid token: %v", err)
				}
				if m.Event != nil && m.Event.Type == string(batchtype.EventPaused) {
					break
				}
			}
		})
	}
}
