package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rowfate/rowfate/batch"
)

// Reconcile asks Config.StatusURL what became of a row whose outcome is
// unknown, by its Idempotency-Key, and returns the row's id when its
// effect happened, an error marked batch.Permanent when the API says it
// was never applied, or another error when the answer does not tell (the
// row stays unknown). Its signature is Kind.ReconcileFunc's; the row
// itself is not sent, its key names it.
func (p *Processor[T]) Reconcile(ctx context.Context, _ T) (string, error) {
	if p.statusURL == "" {
		return "", errors.New("reconcile: httpcall: no Config.StatusURL")
	}
	// Nothing below is permanent but the API's own "never applied": a row
	// whose effect may have happened must not be failed for good because
	// the question could not be asked.
	info, ok := batch.RowFrom(ctx)
	if !ok || info.EffectKey == "" {
		return "", fmt.Errorf("ask %s: %w", p.statusTarget, ErrNoEffectKey)
	}
	if !validHeaderValue(info.EffectKey) || !validHeaderValue(info.TenantID) {
		return "", fmt.Errorf("ask %s: the effect key or tenant holds a control character and cannot be sent as a header", p.statusTarget)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.statusURL, nil)
	if err != nil {
		return "", fmt.Errorf("ask %s: build request: %w", p.statusTarget, unwrapURL(err))
	}
	p.setHeaders(req, info)

	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask %s: cannot tell: %w", p.statusTarget, unwrapURL(err))
	}
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()
	p.logger.DebugContext(ctx, "http status call", "tenant_id", info.TenantID, "batch_id", info.BatchID, "row_no", info.RowNo,
		"status", resp.StatusCode, "duration", time.Since(start))

	switch code := resp.StatusCode; {
	case readErr != nil:
		return "", fmt.Errorf("ask %s: cannot tell, the answer broke off: %w", p.statusTarget, unwrapURL(readErr))
	case code >= 200 && code <= 299:
		if id, ok := jsonID(data); ok {
			return id, nil
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			return loc, nil
		}
		return "", fmt.Errorf("ask %s: cannot tell: status %d without an id", p.statusTarget, code)
	case (code == http.StatusNotFound || code == http.StatusGone) && neverApplied(data):
		return "", batch.Permanent(fmt.Errorf("ask %s: the API never applied this key's effect: %w", p.statusTarget, p.statusError(resp, data)))
	}
	return "", fmt.Errorf("ask %s: cannot tell: %w", p.statusTarget, p.statusError(resp, data))
}

// neverApplied reports whether a body is a JSON object whose "applied" is
// false: the one answer by which a status endpoint says that a key's
// effect did not happen. A bare 404 says nothing of the kind: the URL may
// be wrong, or a proxy's.
func neverApplied(body []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(obj["applied"]), []byte("false"))
}
