package main

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// TestCommandTable: the table of commands names each command as it names
// itself, and holds every command of the tree but man (the man page, made
// from the whole tree).
func TestCommandTable(t *testing.T) {
	a := &app{out: io.Discard, errOut: io.Discard}
	var inTree []string
	for _, c := range a.newRoot().Commands() {
		if c.Name() != "man" {
			inTree = append(inTree, c.Name())
		}
	}
	var inTable []string
	for _, c := range commands {
		if got := c.make(a).Name(); got != c.name {
			t.Errorf("the table names %q a command that calls itself %q", c.name, got)
		}
		inTable = append(inTable, c.name)
	}
	slices.Sort(inTree)
	slices.Sort(inTable)
	if !slices.Equal(inTree, inTable) {
		t.Errorf("the tree's commands %v, the table's %v", inTree, inTable)
	}
}

func TestCommandWord(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"ps"}, "ps"},
		{[]string{"--socket", "/s", "ps", "-a"}, "ps"},
		{[]string{"--socket=/s", "--json", "inspect", "x"}, "inspect"},
		{[]string{"-H", "ssh://h", "--context", "c", "--no-color", "logs"}, "logs"},
		{[]string{"-Hssh://h", "stop"}, "stop"},
		{[]string{"--socket"}, ""},
		{[]string{"--", "ps"}, ""},
		{[]string{"--help"}, ""},
	} {
		if got := commandWord(c.args); got != c.want {
			t.Errorf("commandWord(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestOneCommandTree: a command run with its own tree alone behaves as in
// the whole tree: its help, its global flags, its errors; and what names
// no command (help, a mistyped command) still sees every command.
func TestOneCommandTree(t *testing.T) {
	out := func(args ...string) (string, int) {
		var b bytes.Buffer
		code := run(args, &b, &b)
		return b.String(), code
	}
	help, code := out("ps", "--help")
	if code != exitOK || !bytes.Contains([]byte(help), []byte("Global Flags")) || !bytes.Contains([]byte(help), []byte("--socket")) {
		t.Errorf("ps --help (exit %d):\n%s", code, help)
	}
	if msg, code := out("--socket", "/nonexistent/s.sock", "ps", "--bogus"); code != exitUsage || !bytes.Contains([]byte(msg), []byte("unknown flag: --bogus")) {
		t.Errorf("ps --bogus: exit %d, %q", code, msg)
	}
	if msg, code := out("--host", "ssh://someone@127.0.0.1:1", "ps", "--all-contexts"); code != exitUsage || !bytes.Contains([]byte(msg), []byte("--all-contexts asks every context")) {
		t.Errorf("ps --all-contexts with --host: exit %d, %q", code, msg)
	}
	msg, code := out("pss")
	if code != exitUsage || !bytes.Contains([]byte(msg), []byte(`unknown command "pss"`)) {
		t.Errorf("pss: exit %d, %q", code, msg)
	}
	all, _ := out("--help")
	for _, c := range commands {
		if !bytes.Contains([]byte(all), []byte("  "+c.name+" ")) {
			t.Errorf("sessionctl --help lacks %s:\n%s", c.name, all)
		}
	}
}
