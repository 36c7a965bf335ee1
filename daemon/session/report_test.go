package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

func TestCleanReport(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	bad := []struct {
		rep ipc.Report
		msg string
	}{
		{ipc.Report{Progress: pct(101)}, "progress"},
		{ipc.Report{Progress: pct(-1)}, "progress"},
		{ipc.Report{Status: "done"}, "status"},
		{ipc.Report{Step: "3"}, "step"},
		{ipc.Report{Step: "4/3"}, "step"},
		{ipc.Report{Step: "1/0"}, "step"},
	}
	for _, tt := range bad {
		if _, err := CleanReport(tt.rep); !errors.Is(err, ipc.ErrBadRequest) || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("CleanReport(%+v) = %v, want a bad request about %s", tt.rep, err, tt.msg)
		}
	}
	long := strings.Repeat("é", 600)
	rep, err := CleanReport(ipc.Report{Summary: long, Next: []string{" a ", "", "b", "c", "d", "e", "f"}, Step: "2/5", Progress: pct(50)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(rep.Summary)); n != maxSummary || !strings.HasSuffix(rep.Summary, "…") {
		t.Errorf("summary of %d runes, want %d ending in …", n, maxSummary)
	}
	if strings.Join(rep.Next, ",") != "a,b,c,d,e" {
		t.Errorf("next = %q, want 5 trimmed, empty ones dropped", rep.Next)
	}
}

func TestMergeReport(t *testing.T) {
	p := 30.0
	old := ipc.Report{Summary: "s1", Next: []string{"a"}, Blockers: []string{"q"}, Task: "t1", Progress: &p}
	got := MergeReport(old, ipc.Report{Task: "t2", Next: []string{}})
	if got.Summary != "s1" || got.Task != "t2" || len(got.Next) != 0 || len(got.Blockers) != 1 || *got.Progress != 30 {
		t.Errorf("merged = %+v", got)
	}
}

func TestCleanReportEscapesAndRefusesNUL(t *testing.T) {
	rep, err := CleanReport(ipc.Report{Summary: "done \x1b[31mred\x1b[0m", Next: []string{"a\x07b"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(rep.Summary, 0x1b) || strings.ContainsRune(rep.Next[0], 0x07) {
		t.Errorf("control characters stored raw: %q %q", rep.Summary, rep.Next)
	}
	if _, err := CleanReport(ipc.Report{Next: []string{"ok", "a\x00b"}}); err == nil || !strings.Contains(err.Error(), "next[1]") {
		t.Errorf("a NUL in next[1]: %v, want an error naming it", err)
	}
}
