package storesql

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDecodeValues: whatever the payload, DecodeValues answers as
// encoding/json does: the same strings, or an error when it errs.
func FuzzDecodeValues(f *testing.F) {
	for _, seed := range []string{
		`[]`, `["a","b"]`, `["a", "b"]`, ` [ "x" ] `, `[""]`, `["caf\u00e9"]`, `["café"]`,
		`["a\"b"]`, `["<tag>"]`, `["\u003c"]`, "[\"\xff\"]", "[\"a\tb\"]", `null`, `[null]`,
		`["a",]`, `["a" "b"]`, `["a"]x`, `[1]`, `{}`, ``, `["a"`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []string
		werr := json.Unmarshal(b, &want)
		got, err := DecodeValues(b)
		if (err != nil) != (werr != nil) {
			t.Fatalf("DecodeValues(%q) err %v, encoding/json %v", b, err, werr)
		}
		if err == nil && (!slices.Equal(got, want) || (got == nil) != (want == nil)) {
			t.Fatalf("DecodeValues(%q) = %q, encoding/json %q", b, got, want)
		}
	})
}

// TestDecodePlainRoundTrip: what EncodeValues writes is read back by the
// plain scanner when it can be, and always equal.
func TestDecodePlainRoundTrip(t *testing.T) {
	for _, v := range [][]string{{}, {"a"}, {"Ada Lovelace", "ada@example.com", "GB", "2024-01-31", "1250.50"}, {"a<b"}, {"tab\there"}, {"ünï"}} {
		b, err := EncodeValues(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeValues(b)
		if err != nil || !slices.Equal(got, v) {
			t.Fatalf("round trip of %q: %q, %v", v, got, err)
		}
	}
	if _, ok := decodePlain([]byte(`["Ada", "ada@example.com"]`)); !ok {
		t.Fatal("a jsonb payload of plain strings is not read by the plain scanner")
	}
}

func BenchmarkDecodeValues(b *testing.B) {
	payload := []byte(`["Ada Lovelace", "ada.lovelace.12@example.com", "GB", "2024-01-31", "1250.50"]`)
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeValues(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var v []string
			if err := json.Unmarshal(payload, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
