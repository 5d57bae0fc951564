package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
)

// Principal is who a request acts for.
type Principal struct {
	// TenantID scopes everything the request reads.
	TenantID string
	// Role is batchtype.RoleAdmin (reads and acts) or batchtype.RoleViewer
	// (reads only).
	Role string
	// Name names the credential, for the history of what it changed.
	Name string
}

// CanAct reports whether the principal may change anything.
func (p Principal) CanAct() bool { return p.Role == batchtype.RoleAdmin }

// Actor is how the principal is recorded in a batch's history.
func (p Principal) Actor() string {
	if p.Name == "" {
		return "api"
	}
	return "api:" + p.Name
}

// Authenticator says who a request acts for, or fails.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// ErrUnauthenticated: the request carries no valid credential.
var ErrUnauthenticated = errors.New("unauthenticated")

// StaticToken is one bearer token acting for one tenant: what `batchctl
// serve --token` configures until API tokens come.
type StaticToken struct {
	digest [sha256.Size]byte
	tenant string
}

// NewStaticToken returns an Authenticator for one token and its tenant.
func NewStaticToken(token, tenantID string) *StaticToken {
	return &StaticToken{digest: sha256.Sum256([]byte(token)), tenant: tenantID}
}

// Authenticate accepts the token from the Authorization header
// ("Bearer T") or, for browsers, which cannot set headers on a websocket,
// from a websocket subprotocol "bearer.T" offered alongside "rowfate.v1".
// Digests are compared in constant time.
func (a *StaticToken) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok {
		return Principal{}, ErrUnauthenticated
	}
	d := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(d[:], a.digest[:]) != 1 {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{TenantID: a.tenant, Role: batchtype.RoleAdmin, Name: "static"}, nil
}

// TokenPrefix starts every API token, so that a token pasted where it
// does not belong (a log, a ticket) is recognised for what it is.
const TokenPrefix = "rft_"

// NewToken returns a new random API token: TokenPrefix and 32 random bytes
// in URL-safe base64, which is also a valid websocket subprotocol name.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// TokenHash is how an API token is stored and looked up: the hex SHA-256
// of the token, never the token. A token has 256 random bits, so a fast
// hash is enough: there is nothing to guess.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokenSource is what StoredTokens reads: a *batch.Engine.
type TokenSource interface {
	TokenAuth(ctx context.Context, p batch.TokenAuthParams) (*batchtype.Token, error)
}

// StoredTokens authenticates the API tokens kept in the database
// (`batchctl token create`): each maps to a tenant and a role. A revoked
// token fails from the next request on.
type StoredTokens struct {
	Source TokenSource
}

// Authenticate implements Authenticator.
func (a StoredTokens) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok {
		return Principal{}, ErrUnauthenticated
	}
	t, err := a.Source.TokenAuth(r.Context(), batch.TokenAuthParams{TokenHash: TokenHash(tok)})
	if errors.Is(err, batch.ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	return Principal{TenantID: t.TenantID, Role: t.Role, Name: t.Name}, nil
}

// AnyOf authenticates with the first authenticator that accepts the
// request; a failure other than ErrUnauthenticated (the database is down)
// is returned at once.
type AnyOf []Authenticator

// Authenticate implements Authenticator.
func (as AnyOf) Authenticate(r *http.Request) (Principal, error) {
	for _, a := range as {
		p, err := a.Authenticate(r)
		if err == nil || !errors.Is(err, ErrUnauthenticated) {
			return p, err
		}
	}
	return Principal{}, ErrUnauthenticated
}

// subprotocol is the websocket protocol the event stream speaks.
const subprotocol = "rowfate.v1"

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", false
		}
		return strings.TrimSpace(tok), true
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), "bearer."); ok && tok != "" {
				return tok, true
			}
		}
	}
	return "", false
}

// Insecure lets every request act for one tenant, with no credential: for
// `batchctl serve --insecure-dev` on a developer's machine only.
type Insecure struct{ TenantID string }

// Authenticate implements Authenticator.
func (a Insecure) Authenticate(*http.Request) (Principal, error) {
	return Principal{TenantID: a.TenantID, Role: batchtype.RoleAdmin, Name: "insecure-dev"}, nil
}
