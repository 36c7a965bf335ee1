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
		out[i] = ipc.SessionRow{ID: fmt.Sprintf("id%06d", i), Name: fmt.Sprintf("agent-%d", i), Command: []string{"claude", "-p", "continue the work"},
			State: ipc.StateRunning, PID: 1000 + i, StartedAt: now.Add(-time.Hour), Deadline: now.Add(3 * time.Hour), LastActivity: &act, Checkpoints: 3,
			ProjectDir: fmt.Sprintf("/src/project-%d", i), Usage: &ipc.Usage{CPUPercent: 12.34, RSSBytes: 14 << 20, Procs: 2}}
	}
	return out
}

func TestPrintTable(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ended := now.Add(-time.Minute)
	list := rows(2, now)
	list[1].State, list[1].EndReason, list[1].EndedAt = ipc.StateEnded, ipc.EndComplete, &ended
	var b bytes.Buffer
	(&app{out: &b}).printTable(list, now, false)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table = %q", b.String())
	}
	for _, col := range []string{"ID", "NAME", "PROJECT", "COMMAND", "STATE", "PID", "CPU %", "MEM", "UPTIME", "REMAINING", "RESTARTS", "LAST ACTIVITY", "CHECKPOINTS"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header %q lacks %s", lines[0], col)
		}
	}
	for _, want := range []string{"id000000", "agent-0", "project-0", "claude -p continue the work", "running", "1000", "12.3", "14.0M", "1h00m", "3h00m", "1m30s ago", "3"} {
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
		a.printTable(list, now, false)
	}
}

func TestTableColourKeepsColumnsAligned(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	list := rows(2, now)
	list[1].State, list[1].EndReason = ipc.StateFailed, ""
	plain, colour := newTable(false), newTable(true)
	for _, tb := range []*table{plain, colour} {
		tb.header("A", "STATE", "B")
		for _, r := range list {
			tb.row(cell{text: r.ID}, cell{text: r.State, color: stateColor(r.State, r.EndReason)}, cell{text: "x"})
		}
	}
	var p, c bytes.Buffer
	plain.write(&p)
	colour.write(&c)
	if strings.Contains(p.String(), "\x1b[") {
		t.Errorf("colour without asking: %q", p.String())
	}
	if !strings.Contains(c.String(), "\x1b[32mrunning\x1b[0m") || !strings.Contains(c.String(), "\x1b[31mfailed\x1b[0m") {
		t.Errorf("no colour: %q", c.String())
	}
	strip := strings.NewReplacer("\x1b[32m", "", "\x1b[31m", "", "\x1b[0m", "")
	if strip.Replace(c.String()) != p.String() {
		t.Errorf("coloured table, colours removed:\n%s\nwant the plain one:\n%s", strip.Replace(c.String()), p.String())
	}
}

func TestParseFilters(t *testing.T) {
	list := []ipc.SessionRow{
		{ID: "a", Name: "web-1", State: ipc.StateRunning, ProjectDir: "/src/web"},
		{ID: "b", Name: "web-2", State: ipc.StateEnded, EndReason: ipc.EndTimeout, ProjectDir: "/src/web"},
		{ID: "c", Name: "api", State: ipc.StateWarned, ProjectDir: "/src/api"},
	}
	tests := []struct {
		filters []string
		want    string
	}{
		{nil, "abc"},
		{[]string{"state=running"}, "a"},
		{[]string{"state=running", "state=warned"}, "ac"},
		{[]string{"state=live"}, "ac"},
		{[]string{"name=web-*"}, "ab"},
		{[]string{"name=web-*", "state=ended"}, "b"},
		{[]string{"project=api"}, "c"},
		{[]string{"reason=timeout"}, "b"},
	}
	for _, tt := range tests {
		match, err := parseFilters(tt.filters)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range list {
			if match(r) {
				got += r.ID
			}
		}
		if got != tt.want {
			t.Errorf("filters %v kept %q, want %q", tt.filters, got, tt.want)
		}
	}
	for _, bad := range []string{"state", "color=red", "state=sleepy", "name="} {
		if _, err := parseFilters([]string{bad}); err == nil {
			t.Errorf("filter %q: want an error", bad)
		}
	}
}

// TestRowColumns checks the columns made of a row's times and usage, which
// are cut from one buffer: each in its place whichever of them a row has.
func TestRowColumns(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ended := now.Add(-10 * time.Minute)
	base := rows(1, now)[0]
	tests := []struct {
		name   string
		change func(*ipc.SessionRow)
		want   [6]string // UPTIME, REMAINING, PID, CPU %, MEM, LAST ACTIVITY
	}{
		{"everything", func(*ipc.SessionRow) {}, [6]string{"1h00m", "3h00m", "1000", "12.3", "14.0M", "1m30s ago"}},
		{"no usage", func(s *ipc.SessionRow) { s.Usage = nil }, [6]string{"1h00m", "3h00m", "1000", "-", "-", "1m30s ago"}},
		{"no pid", func(s *ipc.SessionRow) { s.PID = 0 }, [6]string{"1h00m", "3h00m", "-", "12.3", "14.0M", "1m30s ago"}},
		{"no activity", func(s *ipc.SessionRow) { s.LastActivity = nil }, [6]string{"1h00m", "3h00m", "1000", "12.3", "14.0M", "-"}},
		{"small and large", func(s *ipc.SessionRow) { s.Usage = &ipc.Usage{CPUPercent: 150, RSSBytes: 812 << 10} },
			[6]string{"1h00m", "3h00m", "1000", "150.0", "812K", "1m30s ago"}},
		{"ended", func(s *ipc.SessionRow) { s.State, s.EndReason, s.EndedAt = ipc.StateEnded, ipc.EndComplete, &ended },
			[6]string{"50m00s", "-", "-", "-", "-", "1m30s ago"}},
		{"ended, nothing", func(s *ipc.SessionRow) {
			s.State, s.EndedAt, s.LastActivity, s.Usage = ipc.StateEnded, &ended, nil, nil
		}, [6]string{"50m00s", "-", "-", "-", "-", "-"}},
	}
	for _, tt := range tests {
		s := base
		tt.change(&s)
		r := makeRow(s, now, false)
		got := [6]string{r.Uptime, r.Remaining, r.PID, r.CPU, r.Mem, r.LastActivity}
		if got != tt.want {
			t.Errorf("%s: columns %q, want %q", tt.name, got, tt.want)
		}
	}
	for n, want := range map[int64]string{812 << 10: "812K", 14<<20 + 200<<10: "14.2M", 1<<30 + 100<<20: "1.1G"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
