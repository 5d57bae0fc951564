package batchctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTokenCommands: create prints the token once, as the last line of
// stdout; list shows no token; revoke ends it; bad input is a usage error.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := s.run("token", "create", "--tenant", "acme", "--role", "admin", "--name", "ops")
	if r.code != exitOK || !strings.HasPrefix(strings.TrimSpace(r.stdout), "rft_") || !strings.Contains(r.stderr, "shown once") {
		t.Fatalf("create: %s", r)
	}
	token := strings.TrimSpace(r.stdout)
	var created struct {
		ID    int64  `json:"id"`
		Role  string `json:"role"`
		Token string `json:"token"`
	}
	r = s.run("token", "create", "--tenant", "acme", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || created.Role != "viewer" || created.Token == "" || created.Token == token {
		t.Fatalf("create -o json: %s (%v)", r, err)
	}
	r = s.run("token", "list", "--tenant", "acme")
	if r.code != exitOK || !strings.Contains(r.stdout, "ops\tadmin") || !strings.Contains(r.stdout, "viewer\tviewer") || strings.Contains(r.stdout, token) {
		t.Fatalf("list: %s", r)
	}
	if r := s.run("token", "list", "--tenant", "globex"); !strings.Contains(r.stdout, "no API tokens") {
		t.Errorf("another tenant's list: %s", r)
	}
	if r := s.run("token", "revoke", "1", "--tenant", "globex"); r.code != exitError || !strings.Contains(r.stderr, "has no token 1") {
		t.Errorf("revoke of another tenant's token: %s", r)
	}
	if r := s.run("token", "revoke", "1", "--tenant", "acme"); r.code != exitOK {
		t.Fatalf("revoke: %s", r)
	}
	if r := s.run("token", "list", "--tenant", "acme"); !strings.Contains(r.stdout, "revoked") {
		t.Errorf("list after revoke: %s", r)
	}
	for _, bad := range [][]string{{"token", "create", "--role", "root"}, {"token", "revoke", "x"}, {"token"}} {
		if r := s.run(bad...); r.code != exitUsage {
			t.Errorf("%v: %s", bad, r)
		}
	}
}
