package ipc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleRows are rows of every shape a listing has: live and ended, with
// and without usage, agent, tokens and worktree, names and commands with
// what the server escapes (<, >, &) and what it does not (UTF-8).
func sampleRows() []SessionRow {
	t0 := time.Date(2026, 12, 1, 14, 42, 36, 988628439, time.UTC)
	ended := t0.Add(time.Hour)
	active := t0.Add(time.Minute)
	return []SessionRow{
		{ID: "1wnsfd73", Name: "api", Command: []string{"sleep", "1000"}, State: StateRunning, PID: 14495,
			StartedAt: t0, Deadline: t0.Add(4 * time.Hour), ProjectDir: "/tmp/p/32"},
		{ID: "xs7ey5z5", Name: "café ☕", Command: []string{"sh", "-c", "make && ./run <in >out"}, State: StateEnded,
			EndReason: EndTimeout, StartedAt: t0, EndedAt: &ended, Deadline: ended, Restarts: 3, LastActivity: &active,
			Checkpoints: 12, ProjectDir: "/home/ann/work/a \"quoted\" dir", TTY: true,
			Usage:    &Usage{CPUPercent: 12.5, RSSBytes: 1 << 20, Procs: 3},
			Agent:    &Agent{Name: "claude-code", ConversationID: "c0ffee", State: "waiting"},
			Tokens:   &Tokens{Input: 1200, Output: 340},
			Worktree: &Worktree{Repo: "/home/ann/work/repo", Branch: "sessiond/x", Path: "/var/lib/w/x"}},
		{ID: "e", Command: []string{}, StartedAt: t0.In(time.FixedZone("X", 3600))},
		{ID: "q1", Name: "queued", Command: []string{"claude"}, State: StateQueued, StartedAt: t0, Pool: "gpu",
			Queue: &QueuePlace{Pool: "gpu", Place: 3, Priority: 2, Reason: QueuedForPool, Why: "pool gpu is full (2 of 2)", Since: t0}},
	}
}

func TestDecodeRowsAsEncodingJSON(t *testing.T) {
	rows := sampleRows()
	data, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{data, []byte("[]"), []byte(" [ ] \n")} {
		if _, ok := fastRows(doc, string(doc)); !ok {
			t.Errorf("%s: left to encoding/json, want decoded in one pass", doc)
		}
		assertSameAsJSON(t, doc)
	}
	got, err := DecodeRows(data)
	if err != nil {
		t.Fatal(err)
	}
	// Times compare by instant; the rest exactly.
	for i := range got {
		if !got[i].StartedAt.Equal(rows[i].StartedAt) {
			t.Errorf("row %d started %v, want %v", i, got[i].StartedAt, rows[i].StartedAt)
		}
		got[i].StartedAt, rows[i].StartedAt = time.Time{}, time.Time{}
		got[i].Deadline, rows[i].Deadline = time.Time{}, time.Time{}
		got[i].EndedAt, rows[i].EndedAt, got[i].LastActivity, rows[i].LastActivity = nil, nil, nil, nil
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, rows)
	}
}

// TestDecodeRowsLeavesTheRestToEncodingJSON: what the one pass does not
// take gets encoding/json's answer, values and errors alike.
func TestDecodeRowsLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`null`, `[null]`, `[{"ID":"caps"}]`, `[{"id":"a","id":"b"}]`, `[{"id":"a","extra":{"x":[1,2]}}]`,
		`[{"pid":1e3}]`, `[{"pid":01}]`, `[{"pid":1.5}]`, `[{"pid":99999999999999999999}]`, `[{"pid":"7"}]`,
		`[{"name":"\u00e9\n"}]`, "[{\"name\":\"bad \xff utf-8\"}]", `[{"started_at":"yesterday"}]`,
		`[{"usage":{"cpu_percent":"x"}}]`, `[{"usage":{"procs":2},"tty":true}] trailing`, `[{"tty":1}]`,
		`[{"command":["a",null,"b\"c"]}]`, `[{"command":"a"}]`, `[`, `[{`, `[{"id"`, `[{"id":}]`, `[,]`, `[{}{}]`,
		`[{"usage":null,"agent":null,"ended_at":null,"command":null,"name":null}]`,
		`[{"usage":{"rss_bytes":1.5}}]`, `[{"usage":{"procs":1e2}}]`, `[{"usage":{"cpu_percent":1e999}}]`,
		`[{"usage":{"cpu_percent":-0.5e-3,"procs":2}}]`, `[{"usage":{"procs":2,"procs":3}}]`, `[{"usage":{"x":1}}]`,
		`[{"usage":{"cpu_percent":01}}]`, `[{"usage":{}}]`, `[{"usage":{"rss_bytes":9223372036854775808}}]`,
		// Keys out of the server's order, spaced, repeated after others.
		`[{"pid":1,"id":"a","name":"n"}]`, `[{"id" : "a" , "name":"n"}]`, `[{"id":"a","name":"x","id":"b"}]`,
		`[{"queue":null,"id":"a"}]`, `[{"ID":"a","id":"b"}]`, `[{"idx":"a"}]`, `[{"id":"a"` + "\t" + `}]`,
		`[{"usage":{"procs":2,"rss_bytes":5,"cpu_percent":1.5}}]`, `[{"usage":{ "cpu_percent" : 1 , "procs":1}}]`,
		`[{"usage":{"cpu_percent":1,"cpu_percent":2}}]`, `[{"usage":{"rss_bytes":1,"procs":1,"rss_bytes":2}}]`,
	} {
		assertSameAsJSON(t, []byte(doc))
	}
}

// TestKeyLitsInBitOrder: the i-th key as the server writes it is the key
// of bit i, which the one pass takes it for.
func TestKeyLitsInBitOrder(t *testing.T) {
	for i, lit := range keyLits {
		if key := rowKey(lit[1 : len(lit)-2]); key != 1<<i {
			t.Errorf("%s: key %b, want bit %d", lit, key, i)
		}
	}
	for typ, lits := range map[reflect.Type][][]byte{reflect.TypeOf(SessionRow{}): keyLits[:], reflect.TypeOf(Usage{}): usageLits[:]} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if want := `"` + name + `":`; i >= len(lits) || string(lits[i]) != want {
				t.Errorf("%s.%s is written as %s, not the key of bit %d", typ.Name(), typ.Field(i).Name, want, i)
			}
		}
	}
}

func assertSameAsJSON(t *testing.T, doc []byte) {
	t.Helper()
	// The answer's own bytes, as the client decodes it, and a copy.
	owned, oerr := decodeOwnedRows(append([]byte(nil), doc...))
	got, err := DecodeRows(doc)
	if (err == nil) != (oerr == nil) || (err == nil && !sameRows(got, owned)) {
		t.Errorf("%q: from its own bytes %+v (%v), from a copy %+v (%v)", doc, owned, oerr, got, err)
	}
	var want []SessionRow
	werr := json.Unmarshal(doc, &want)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Errorf("%q: error %v, encoding/json says %v", doc, err, werr)
		return
	}
	if err == nil && !sameRows(got, want) {
		t.Errorf("%q: decoded\n%+v\nencoding/json:\n%+v", doc, got, want)
	}
}

// sameRows compares what two decodings made, times by their text (zone
// and monotonic reading aside, as encoding/json writes them).
func sameRows(a, b []SessionRow) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) || reflect.DeepEqual(a, b)
}

func FuzzDecodeRows(f *testing.F) {
	data, _ := json.Marshal(sampleRows())
	f.Add(data)
	f.Add([]byte(`[{"id":"a","pid":-0,"command":[],"tty":false}]`))
	f.Add([]byte(`[{"usage":{"procs":2}}]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		assertSameAsJSON(t, doc)
	})
}

func BenchmarkDecodeRows(b *testing.B) {
	var rows []SessionRow
	for i := range 1000 {
		r := sampleRows()[0]
		r.ID, r.Name, r.ProjectDir = fmt.Sprintf("s%07d", i), fmt.Sprint(i), fmt.Sprintf("/tmp/p/%d", i)
		r.Usage = &Usage{CPUPercent: 0.1, RSSBytes: 1 << 20, Procs: 1} // as ps asks: with stats
		rows = append(rows, r)
	}
	data, _ := json.Marshal(rows)
	// The same listing with its sessions in a pool (sessiond.toml pool =),
	// one of them queued.
	for i := range rows {
		rows[i].Pool = "gpu"
	}
	rows[0].State, rows[0].Queue = StateQueued, &QueuePlace{Pool: "gpu", Place: 1, Reason: QueuedForPool}
	pooled, _ := json.Marshal(rows)
	b.SetBytes(int64(len(data)))
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRows(pooled); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one pass", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRows(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var out []SessionRow
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestWarningText(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if got := WarningText(now.Add(90*time.Second), now); !strings.Contains(got, "will be stopped in 1m30s (at 2026-12-01T10:01:30Z)") {
		t.Errorf("a deadline ahead: %q", got)
	}
	if got := WarningText(now.Add(-2*time.Second), now); !strings.Contains(got, "deadline (2026-12-01T09:59:58Z) has passed: it is being stopped now") || strings.Contains(got, "in 0s") {
		t.Errorf("a deadline passed: %q", got)
	}
}
