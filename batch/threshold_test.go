package batch

import (
	"errors"
	"testing"
)

func TestThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in         string
		bad, total int64
		exceeded   bool
	}{
		{"", 1000, 1000, false},
		{"0", 0, 10, false},
		{"0", 1, 10, true},
		{"10", 10, 300, false},
		{"10", 11, 300, true},
		{"5%", 15, 300, false},
		{"5%", 16, 300, true},
		{"4.9%", 15, 300, true},
		{"100%", 300, 300, false},
		{"1%", 0, 0, false},
	} {
		th, err := ParseThreshold(tc.in)
		if err != nil {
			t.Fatalf("ParseThreshold(%q): %v", tc.in, err)
		}
		if got := th.Exceeded(tc.bad, tc.total); got != tc.exceeded {
			t.Errorf("%q: %d of %d exceeded = %v, want %v", tc.in, tc.bad, tc.total, got, tc.exceeded)
		}
		if tc.in != "" && th.String() != tc.in {
			t.Errorf("%q reads back as %q", tc.in, th.String())
		}
	}
	for _, bad := range []string{"-1", "abc", "0%", "101%", "5%%", "1e3"} {
		if _, err := ParseThreshold(bad); !errors.Is(err, ErrBadParams) {
			t.Errorf("ParseThreshold(%q): %v, want ErrBadParams", bad, err)
		}
	}
}
