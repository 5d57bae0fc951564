package validate

import (
	"github.com/go-playground/validator/v10"
)

// emailCheck is validator's email check, answered without its checks for
// the addresses most files hold. validator's own parses the address with
// net/mail and then matches a regular expression written for every form
// RFC 5322 allows (quoted local parts, non-ASCII letters); on a customers
// import that match alone was 15% of the importer's CPU. An address in
// the plain form simpleEmail reads is one that both of validator's checks
// accept (FuzzSimpleEmail holds it to that); any other is asked of
// validator's own check, so no answer changes.
func emailCheck() validator.Func {
	plain := validator.New()
	return func(fl validator.FieldLevel) bool {
		s := fl.Field().String()
		return simpleEmail(s) || plain.Var(s, "email") == nil
	}
}

// simpleEmail reports whether s is local@domain in plain ASCII: a local
// part of RFC 5322 atoms joined by single dots, and a domain of at least
// two labels joined by single dots, each label letters, digits and
// inner hyphens, the last one letters only.
func simpleEmail(s string) bool {
	at := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '@' {
			at = i
			break
		}
	}
	if at <= 0 {
		return false
	}
	return dotAtom(s[:at]) && plainDomain(s[at+1:])
}

// dotAtom reports whether s is atoms of atext joined by single dots.
func dotAtom(s string) bool {
	prev := byte('.')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if prev == '.' {
				return false
			}
		case !atext(c):
			return false
		}
		prev = c
	}
	return prev != '.'
}

// atext is RFC 5322's atext, in ASCII.
func atext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '/', '=', '?', '^', '_', '`', '{', '|', '}', '~':
		return true
	}
	return false
}

// plainDomain reports whether s is two or more labels joined by single
// dots, each of letters, digits and hyphens that neither begin nor end
// it, the last of letters only.
func plainDomain(s string) bool {
	labels, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			continue
		}
		label := s[start:i]
		last := i == len(s)
		if !plainLabel(label, last) {
			return false
		}
		labels++
		start = i + 1
	}
	return labels >= 2
}

func plainLabel(l string, last bool) bool {
	if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case ('0' <= c && c <= '9' || c == '-') && !last:
		default:
			return false
		}
	}
	return true
}
