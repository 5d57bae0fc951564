package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// maxJSONBody bounds a JSON request body that carries no rows.
const maxJSONBody = 1 << 20

// pathInt reads a positive integer path value.
func pathInt(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		code := "bad_request"
		if name == "id" {
			code = "bad_batch_id"
		}
		return 0, problemf(http.StatusBadRequest, code, "%s %q is not a positive integer", name, v)
	}
	return n, nil
}

// queryInt reads an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequestf("query parameter %s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// mediaType returns the request's media type, lower case, without
// parameters; "" when the request has no Content-Type.
func mediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "invalid"
	}
	return mt
}

// decodeJSON reads a JSON body of at most max bytes into v, refusing
// unknown fields (a misspelt option must not be ignored) and trailing
// data. An empty body leaves v as it is when optional.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, max int64, optional bool) error {
	mt := mediaType(r)
	if mt == "" && optional && r.ContentLength <= 0 {
		return nil
	}
	if mt != "application/json" {
		return problemf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as application/json, not %q", r.Header.Get("Content-Type"))
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var me *http.MaxBytesError
		switch {
		case errors.As(err, &me):
			return fmt.Errorf("request body: %w", err)
		case errors.Is(err, io.EOF) && optional:
			return nil
		}
		return badRequestf("request body: %v", jsonProblem(err))
	}
	if dec.More() {
		return badRequestf("request body: more than one JSON value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequestf("request body: data after the JSON value")
	}
	return nil
}

// jsonProblem says where a JSON body went wrong, in words.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return fmt.Sprintf("%s must be a JSON %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF):
		return "empty body"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	}
	return "number"
}

// boolField reads a form field's boolean ("", "true", "false", "1", "0").
func boolField(fields map[string][]string, name string) (bool, error) {
	vs := fields[name]
	if len(vs) == 0 || vs[0] == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, badRequestf("form field %s=%q: want true or false", name, vs[0])
	}
	return b, nil
}

// contentDisposition names a download, with an ASCII fallback and the
// UTF-8 name (RFC 6266).
func contentDisposition(name string) string {
	ascii := make([]rune, 0, len(name))
	for _, c := range name {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '_'
		}
		ascii = append(ascii, c)
	}
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, string(ascii), urlPathEscape(name))
}

// urlPathEscape percent-encodes everything but RFC 5987's attr-chars.
func urlPathEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// keyset trims a page that was read with limit+1 items and returns the
// cursor of the next page: the last item's key, or nil when there is no
// next page. A nil page becomes empty, so that it encodes as [].
func keyset[T any](items []T, limit int64, key func(T) int64) ([]T, *int64) {
	if items == nil {
		items = []T{}
	}
	if int64(len(items)) <= limit {
		return items, nil
	}
	items = items[:limit]
	k := key(items[len(items)-1])
	return items, &k
}

// pageParams reads a keyset page's limit and cursor (the query parameter
// named cursor: after or before).
func pageParams(r *http.Request, cursor string, def, max int64) (limit, from int64, err error) {
	if limit, err = queryInt(r, "limit", def, 1, max); err != nil {
		return 0, 0, err
	}
	from, err = queryInt(r, cursor, 0, 0, 1<<62)
	return limit, from, err
}
