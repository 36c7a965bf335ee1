// Package manpage writes the man pages (section 1) of a cobra command tree
// in roff, one page per command: name, synopsis, description, options,
// the options of the parent commands, and the related pages. It needs
// nothing but cobra, so that the binaries that carry a `man` command do
// not link a Markdown renderer for it.
package manpage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Header is what every page's title line says.
type Header struct {
	// Source is the program and version ("sessiond 1.2.0"); Manual the
	// manual's title ("sessiond manual").
	Source, Manual string
	// Date is the pages' date: $SOURCE_DATE_EPOCH when set, so that builds
	// are reproducible; else now.
	Date time.Time
}

// DateFromEnv is $SOURCE_DATE_EPOCH as a time, else now.
func DateFromEnv() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC()
}

// WriteTree writes the page of root and of every command below it that is
// not hidden into dir, as <command-path>.1 (sessionctl-start.1).
func WriteTree(root *cobra.Command, h Header, dir string) error {
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := WriteTree(c, h, dir); err != nil {
			return err
		}
	}
	name := strings.ReplaceAll(root.CommandPath(), " ", "-") + ".1"
	if err := os.WriteFile(filepath.Join(dir, name), Page(root, h), 0o644); err != nil {
		return fmt.Errorf("write man page %s: %w", name, err)
	}
	return nil
}

// Page is the man page of one command.
func Page(c *cobra.Command, h Header) []byte {
	var b bytes.Buffer
	title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
	fmt.Fprintf(&b, ".TH %q \"1\" %q %q %q\n", title, h.Date.Format("Jan 2006"), h.Source, h.Manual)
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", text(strings.ReplaceAll(c.CommandPath(), " ", "-")), text(c.Short))
	b.WriteString(".SH SYNOPSIS\n")
	fmt.Fprintf(&b, "\\fB%s\\fP\n", text(c.UseLine()))
	b.WriteString(".SH DESCRIPTION\n")
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	for i, para := range strings.Split(strings.TrimSpace(desc), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		for _, line := range strings.Split(para, "\n") {
			b.WriteString(text(line) + "\n")
		}
	}
	options(&b, "OPTIONS", c.NonInheritedFlags())
	options(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		b.WriteString(".SH EXAMPLE\n.EX\n")
		for _, line := range strings.Split(strings.TrimRight(c.Example, "\n"), "\n") {
			b.WriteString(text(line) + "\n")
		}
		b.WriteString(".EE\n")
	}
	var related []string
	if c.HasParent() {
		related = append(related, ref(c.Parent()))
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			related = append(related, ref(sub))
		}
	}
	if len(related) > 0 {
		b.WriteString(".SH SEE ALSO\n" + strings.Join(related, ", ") + "\n")
	}
	return b.Bytes()
}

func options(b *bytes.Buffer, heading string, flags *pflag.FlagSet) {
	var items []string
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "\\fB\\-\\-" + text(f.Name) + "\\fP"
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "\\fB\\-" + text(f.Shorthand) + "\\fP, " + name
		}
		if f.Value.Type() != "bool" {
			name += "=" + text(f.Value.Type())
		}
		usage := text(f.Usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" {
			usage += " (default " + text(f.DefValue) + ")"
		}
		items = append(items, ".TP\n"+name+"\n"+usage+"\n")
	})
	if len(items) == 0 {
		return
	}
	b.WriteString(".SH " + heading + "\n")
	for _, it := range items {
		b.WriteString(it)
	}
}

func ref(c *cobra.Command) string {
	return "\\fB" + text(strings.ReplaceAll(c.CommandPath(), " ", "-")) + "\\fP(1)"
}

// text escapes s for roff: backslashes, and a line that would start with a
// control character.
func text(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	s = strings.ReplaceAll(s, "-", "\\-")
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = "\\&" + s
	}
	return s
}

// Command is the hidden `man DIR` command of a binary of the given
// version: the pages of its whole command tree, written into DIR, for the
// packages.
func Command(version string) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			root.DisableAutoGenTag = true
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			h := Header{Source: "sessiond " + version, Manual: "sessiond manual", Date: DateFromEnv()}
			if err := WriteTree(root, h, args[0]); err != nil {
				return fmt.Errorf("write man pages into %s: %w", args[0], err)
			}
			return nil
		},
	}
}
