package httpcall

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// StatusError is a non-2xx answer. Process returns it wrapped, and marked
// batch.Permanent when the status is one retrying cannot fix, so a caller
// reads the status with errors.As.
type StatusError struct {
	// StatusCode is the answer's HTTP status.
	StatusCode int
	// RetryAfter is the wait the server asked for in its Retry-After
	// header; zero when it asked for none.
	RetryAfter time.Duration
	// Body is the start of the answer's body, at most 512 bytes, with
	// control characters blanked: for the row's error message, so that it
	// says what the API said.
	Body string
}

// Error says the status, why it is retried when it is, the wait asked for
// and the body's start.
func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode == http.StatusConflict {
		b.WriteString(" (a request with the same idempotency key is in flight)")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (server asks to retry after %s)", e.RetryAfter)
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

// statusError describes a non-2xx answer.
func (p *Processor[T]) statusError(resp *http.Response, body []byte) *StatusError {
	return &StatusError{
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), p.now()),
		Body:       excerpt(body),
	}
}

// retryAfter parses a Retry-After value, delay-seconds or an HTTP date,
// into a wait from now; zero when absent, malformed or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Bound it so that a silly value cannot overflow a Duration.
		return time.Duration(min(secs, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// excerpt returns the first maxExcerpt bytes of body as valid UTF-8 on one
// line, for an error message.
func excerpt(body []byte) string {
	if len(body) > maxExcerpt {
		body = body[:maxExcerpt]
	}
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// reservedHeader reports whether Config.Header may not set name: the
// processor sets it, or the client drops or overrides it.
func reservedHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case HeaderIdempotencyKey, "Content-Type", "Host", "Content-Length", "Transfer-Encoding", "Connection":
		return true
	}
	return strings.HasPrefix(http.CanonicalHeaderKey(name), "X-Rowfate-")
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 5.1).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v can be sent as a header value: no
// control characters but tab (RFC 9110 5.5), which would otherwise fail
// the request on every attempt or split the header.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
