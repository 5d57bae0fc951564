// Package webhook signs and verifies webhooks in the Standard Webhooks
// format (https://www.standardwebhooks.com): the headers webhook-id,
// webhook-timestamp (Unix seconds) and webhook-signature, whose entries
// "v1,<base64>" are HMAC-SHA256 of "id.timestamp.body" under a secret.
//
// Rowfate signs the webhooks it sends with Sign; a receiver verifies them
// with Verify, on the raw body before it parses anything.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The header names of the format.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a webhook's timestamp may be from the
// receiver's clock, either way, before it is refused as a replay (or a
// clock too far off to trust).
const DefaultTolerance = 5 * time.Minute

// secretPrefix starts a secret in the format's text form.
const secretPrefix = "whsec_"

var (
	// ErrMissingHeader: a webhook header is absent or empty.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrTimestamp: the timestamp is not a number, or outside the
	// tolerance.
	ErrTimestamp = errors.New("webhook: timestamp out of tolerance")
	// ErrSignature: no v1 signature matches any of the secrets.
	ErrSignature = errors.New("webhook: no matching signature")
	// ErrSecret: a secret is not base64 (with or without "whsec_").
	ErrSecret = errors.New("webhook: bad secret")
)

// DecodeSecret returns the key of a secret in the format's text form:
// base64, optionally prefixed "whsec_".
func DecodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: not base64", ErrSecret)
	}
	return key, nil
}

// Sign returns the webhook-signature value ("v1,<base64>") of a message.
func Sign(secret, id string, at time.Time, body []byte) (string, error) {
	key, err := DecodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(at.Unix(), 10), body)), nil
}

// SetHeaders signs body and sets the three headers on h.
func SetHeaders(h http.Header, secret, id string, at time.Time, body []byte) error {
	sig, err := Sign(secret, id, at, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// Options tune Verify. The zero value uses DefaultTolerance and the
// current time.
type Options struct {
	// Tolerance is how far the timestamp may be from Now, either way.
	Tolerance time.Duration
	// Now is the receiver's clock; defaults to time.Now.
	Now func() time.Time
}

// Verify checks a webhook's headers against its raw body, under any of
// secrets (several are active while one is rotated out). It returns the
// webhook's id, for deduplication, once a v1 signature matches; the
// comparison is constant-time. Check the result before parsing the body.
func Verify(h http.Header, body []byte, secrets []string, o *Options) (string, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = DefaultTolerance
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	for name, v := range map[string]string{HeaderID: id, HeaderTimestamp: ts, HeaderSignature: sigs} {
		if v == "" {
			return "", fmt.Errorf("%w: %s", ErrMissingHeader, name)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not Unix seconds", ErrTimestamp, ts)
	}
	if d := opts.Now().Sub(time.Unix(sec, 0)); d > opts.Tolerance || d < -opts.Tolerance {
		return "", fmt.Errorf("%w: %s off the receiver's clock", ErrTimestamp, d.Round(time.Second))
	}
	var keys [][]byte
	for _, s := range secrets {
		key, err := DecodeSecret(s)
		if err != nil {
			return "", err
		}
		keys = append(keys, key)
	}
	for _, key := range keys {
		want := mac(key, id, ts, body)
		for _, entry := range strings.Fields(sigs) {
			version, sig, ok := strings.Cut(entry, ",")
			if !ok || version != "v1" {
				continue // other schemes (v1a: asymmetric) are not ours
			}
			got, err := base64.StdEncoding.DecodeString(sig)
			if err == nil && hmac.Equal(got, want) {
				return id, nil
			}
		}
	}
	return "", ErrSignature
}

func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
