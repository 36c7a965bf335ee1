package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

func rows(n int, now time.Time) []ipc.SessionRow {
	out := make([]ipc.SessionRow, n)
	for i := range out {
		act := now.Add(-90 * time.Second)
		out[i] = ipc.SessionRow{ID: fmt.Sprintf("id%06d", i), Name: fmt.Sprintf("project-%d", i), Command: []string{"claude", "-p", "continue the work"},
			State: ipc.StateRunning, PID: 1000 + i, StartedAt: now.Add(-time.Hour), Deadline: now.Add(3 * time.Hour), LastActivity: &act, Checkpoints: 3}
	}
	return out
}

func TestPrintTable(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ended := now.Add(-time.Minute)
	list := rows(2, now)
	list[1].State, list[1].EndReason, list[1].EndedAt = ipc.StateEnded, ipc.EndComplete, &ended
	var b bytes.Buffer
	(&app{out: &b}).printTable(list, now)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table = %q", b.String())
	}
	for _, col := range []string{"ID", "PROJECT", "COMMAND", "STATE", "PID", "UPTIME", "REMAINING", "RESTARTS", "LAST ACTIVITY", "CHECKPOINTS"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header %q lacks %s", lines[0], col)
		}
	}
	for _, want := range []string{"id000000", "project-0", "claude -p continue the work", "running", "1000", "1h00m", "3h00m", "1m30s ago", "3"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	if !strings.Contains(lines[2], "ended (complete)") || !strings.Contains(lines[2], " - ") {
		t.Errorf("ended row %q: want its end reason and no pid or remaining time", lines[2])
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"}, {45 * time.Second, "45s"}, {12*time.Minute + 5*time.Second, "12m05s"},
		{3*time.Hour + 4*time.Minute, "3h04m"}, {50 * time.Hour, "2d2h"},
	}
	for _, tt := range tests {
		if got := shortDuration(tt.d); got != tt.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func BenchmarkPrintTable100(b *testing.B) {
	now := time.Now()
	list := rows(100, now)
	var buf bytes.Buffer
	a := &app{out: &buf}
	for range b.N {
		buf.Reset()
		a.printTable(list, now)
	}
}
