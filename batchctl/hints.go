package batchctl

import (
	"strings"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// flagOf spells a hint as the import flag that settles it: the library
// names options in words and carries them as data (rows.Hint); the CLI
// names them as its flags.
func flagOf(h rows.Hint) string {
	flag := "--" + strings.ReplaceAll(string(h.Option), "_", "-")
	switch {
	case len(h.Values) == 0:
		return flag
	case h.Option == rows.OptionMap || h.Option == rows.OptionIgnore:
		return flag + " " + shellQuote(strings.Join(h.Values, ""))
	}
	return flag + " " + strings.Join(h.Values, "|")
}

// withFlags is msg followed by the flags of hints, any of which settles
// it: "... (--decimal-comma or --locale de|fr)".
func withFlags(msg string, hints []rows.Hint) string {
	if len(hints) == 0 {
		return msg
	}
	return msg + " (" + flagsText(hints) + ")"
}

// flagsText is the flags of hints, any of which settles what they are
// about: "--decimal-comma or --locale de|fr".
func flagsText(hints []rows.Hint) string {
	flags := make([]string, len(hints))
	for i, h := range hints {
		flags[i] = flagOf(h)
	}
	return strings.Join(flags, " or ")
}

// fieldErrorText is fe as the CLI prints it: where it is, what is wrong,
// and the flags that would settle it.
func fieldErrorText(fe rows.FieldError) string { return withFlags(fe.Error(), fe.Hints) }

// fieldErrorsText is a row's errors on one line, each with its flags.
func fieldErrorsText(errs []rows.FieldError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		msg := e.Message
		if e.Column != "" {
			msg = e.Column + ": " + msg
		}
		parts[i] = withFlags(msg, e.Hints)
	}
	return strings.Join(parts, "; ")
}

// warningText is a batch's warning with the flags that would settle it.
func warningText(w batchtype.Warning) string { return withFlags(w.Message, w.Hints) }
