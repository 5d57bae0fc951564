package rows

import "testing"

func TestSafeCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                  "",
		"plain":             "plain",
		"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")",
		"+1":                "'+1",
		"-1":                "'-1",
		"@SUM(A1)":          "'@SUM(A1)",
		"\tx":               "'\tx",
		"\rx":               "'\rx",
		"\nx":               "'\nx",
		"\x00x":             "'\x00x",
		"a=b":               "a=b",
		"'already":          "'already",
	} {
		if got := SafeCell(in); got != want {
			t.Errorf("SafeCell(%q) = %q, want %q", in, got, want)
		}
	}
}
