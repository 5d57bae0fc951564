package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Principal is who a request acts for.
type Principal struct {
	// TenantID scopes everything the request reads.
	TenantID string
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
	return Principal{TenantID: a.tenant}, nil
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
	return Principal{TenantID: a.TenantID}, nil
}
