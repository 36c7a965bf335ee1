package agent

import "strings"

// valueKind is how a command-line option takes its value, in the parsers
// the agents use (commander for Claude Code, clap for Codex).
type valueKind uint8

// The zero valueKind is an option that takes no value (a flag).
const (
	// oneValue takes the next argument (or =value).
	oneValue valueKind = iota + 1
	// optionalValue takes the next argument unless it starts with "-".
	optionalValue
	// manyValues takes every following argument up to the next one that
	// starts with "-" (commander's and clap's variadic options).
	manyValues
)

// cliGrammar is what sessiond knows of an agent's command line: the options
// that take values, so that positionals and subcommands can be told apart
// from option values.
type cliGrammar struct {
	options     map[string]valueKind
	subcommands map[string]bool
}

// cliOption is one option found on a command line.
type cliOption struct {
	// Name is the option as spelled, without any =value.
	Name   string
	Values []string
	// Start and End delimit the option and its values in the arguments.
	Start, End int
}

// cliScan is a command line split into options and positionals.
type cliScan struct {
	Options []cliOption
	// Positionals are indexes into the arguments.
	Positionals []int
	// Stop is the index scanning stopped at: len(args), or the first
	// positional when scanning was asked to stop there.
	Stop int
}

// scan splits args (without the executable). With stopAtPositional it stops
// at the first positional argument, which is then Positionals[0] and Stop
// (for a subcommand, whose own options follow). Options unknown to the
// grammar are taken as flags; everything after "--" is positional.
func (g cliGrammar) scan(args []string, stopAtPositional bool) cliScan {
	var s cliScan
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for j := i + 1; j < len(args); j++ {
				s.Positionals = append(s.Positionals, j)
			}
			s.Stop = len(args)
			return s
		}
		if len(a) < 2 || a[0] != '-' {
			s.Positionals = append(s.Positionals, i)
			if stopAtPositional {
				s.Stop = i
				return s
			}
			continue
		}
		name, inline, hasInline := a, "", false
		if strings.HasPrefix(a, "--") {
			if k := strings.IndexByte(a, '='); k > 0 {
				name, inline, hasInline = a[:k], a[k+1:], true
			}
		} else if len(a) > 2 {
			// -mVALUE: a short option with its value attached.
			if kind := g.options[a[:2]]; kind == oneValue || kind == optionalValue {
				name, inline, hasInline = a[:2], a[2:], true
			}
		}
		o := cliOption{Name: name, Start: i, End: i + 1}
		kind := g.options[name]
		switch {
		case hasInline:
			// --opt=value takes that one value, even for a variadic
			// option (measured with Claude Code's commander).
			o.Values = []string{inline}
		case kind == oneValue:
			if i+1 < len(args) {
				i++
				o.Values = []string{args[i]}
			}
		case kind == optionalValue:
			if i+1 < len(args) && !isOptionLike(args[i+1]) {
				i++
				o.Values = []string{args[i]}
			}
		case kind == manyValues:
			for i+1 < len(args) && !isOptionLike(args[i+1]) {
				i++
				o.Values = append(o.Values, args[i])
			}
		}
		o.End = i + 1
		s.Options = append(s.Options, o)
	}
	s.Stop = len(args)
	return s
}

// isOptionLike is whether an argument would be read as an option (or "--").
func isOptionLike(a string) bool { return len(a) > 1 && a[0] == '-' }

// has reports whether any of names was given.
func (s cliScan) has(names ...string) bool {
	_, ok := s.last(names...)
	return ok
}

// last returns the last occurrence of any of names.
func (s cliScan) last(names ...string) (cliOption, bool) {
	for i := len(s.Options) - 1; i >= 0; i-- {
		for _, n := range names {
			if s.Options[i].Name == n {
				return s.Options[i], true
			}
		}
	}
	return cliOption{}, false
}

// without returns args less every occurrence (with its values) of names.
func (s cliScan) without(args []string, names ...string) []string {
	drop := make([]bool, len(args))
	for _, o := range s.Options {
		for _, n := range names {
			if o.Name == n {
				for i := o.Start; i < o.End; i++ {
					drop[i] = true
				}
			}
		}
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if !drop[i] {
			out = append(out, a)
		}
	}
	return out
}
