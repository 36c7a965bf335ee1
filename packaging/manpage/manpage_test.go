package manpage

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool", Long: "A tool that does things.\n\n.Dot lines and back\\slashes stay text."}
	root.PersistentFlags().String("socket", "", "the socket")
	start := &cobra.Command{Use: "start [flags] DIR", Short: "Start it", Run: func(*cobra.Command, []string) {}}
	start.Flags().BoolP("quiet", "q", false, "print only the id")
	start.Flags().String("timeout", "4h", "the deadline")
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(start, hidden)
	return root
}

func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	h := Header{Source: "tool 1.0", Manual: "tool manual", Date: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	if err := WriteTree(tree(), h, dir); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if strings.Join(names, " ") != "tool-start.1 tool.1" {
		t.Fatalf("pages %v, want tool.1 and tool-start.1 (no hidden command)", names)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "tool-start.1"))
	for _, want := range []string{
		`.TH "TOOL-START" "1" "Dec 2026" "tool 1.0" "tool manual"`,
		".SH NAME\ntool\\-start \\- Start it\n",
		"\\fB\\-q\\fP, \\fB\\-\\-quiet\\fP\nprint only the id\n",
		"\\fB\\-\\-timeout\\fP=string\nthe deadline (default 4h)\n",
		".SH OPTIONS INHERITED FROM PARENT COMMANDS\n.TP\n\\fB\\-\\-socket\\fP=string\n",
		".SH SEE ALSO\n\\fBtool\\fP(1)\n",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("tool-start.1 lacks %q:\n%s", want, page)
		}
	}
	root, _ := os.ReadFile(filepath.Join(dir, "tool.1"))
	if !strings.Contains(string(root), "\\&.Dot lines and back\\eslashes stay text.") || strings.Contains(string(root), "secret") {
		t.Errorf("tool.1 does not escape its text or shows a hidden command:\n%s", root)
	}
	if _, err := exec.LookPath("man"); err == nil {
		out, err := exec.Command("man", "-l", "-Tutf8", filepath.Join(dir, "tool-start.1")).CombinedOutput()
		plain := regexp.MustCompile(".\x08").ReplaceAllString(string(out), "")
		if err != nil || !strings.Contains(plain, "-q, --quiet") || !strings.Contains(plain, "tool-start - Start it") {
			t.Errorf("man -l renders %q (%v)", out, err)
		}
	}
}
