package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

// assertEncodesAsJSON: AppendRows gives what json.Marshal gives, or fails
// where it fails.
func assertEncodesAsJSON(t *testing.T, rows []SessionRow) {
	t.Helper()
	want, werr := json.Marshal(rows)
	got, gerr := AppendRows([]byte("x"), rows)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("AppendRows error %v, json.Marshal's %v", gerr, werr)
	}
	if werr == nil && !bytes.Equal(got[1:], want) {
		t.Fatalf("AppendRows gave\n%s\njson.Marshal\n%s", got[1:], want)
	}
}

func TestAppendRowsAsEncodingJSON(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 14, 42, 36, 0, time.UTC)
	queued := sampleRows()[1]
	queued.Pool, queued.Queue = "gpu", &QueuePlace{Pool: "gpu", Place: 2, Reason: QueuedForPool, Since: t0}
	odd := SessionRow{ID: "\x00\x1f\u2028\u2029\xff", Name: "<&>", Command: nil, StartedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	for name, rows := range map[string][]SessionRow{
		"samples": sampleRows(), "none": {}, "nil": nil, "queued": {queued},
		"a year JSON refuses": {odd},
		"floats": {
			{Usage: &Usage{CPUPercent: 1e-7}}, {Usage: &Usage{CPUPercent: 1e21}}, {Usage: &Usage{CPUPercent: -0.000001}},
			{Usage: &Usage{CPUPercent: 123456789.125}}, {Usage: &Usage{CPUPercent: math.Copysign(0, -1)}},
		},
		"not a number": {{Usage: &Usage{CPUPercent: math.NaN()}}},
		"zones":        {{StartedAt: t0.In(time.FixedZone("", -(3*3600 + 1800))), Deadline: t0.Add(123456789)}},
	} {
		t.Run(name, func(t *testing.T) { assertEncodesAsJSON(t, rows) })
	}
}

func FuzzAppendRows(f *testing.F) {
	f.Add("1wnsfd73", "api", "sleep", "running", "/tmp/p", int64(1700000000), 12.5, true)
	f.Add("x", "café <☕>", "sh -c 'a && b'", "ended", "\x00\u2028", int64(-62135596800), 1e-9, false)
	f.Fuzz(func(t *testing.T, id, name, arg, st, dir string, unix int64, cpu float64, tty bool) {
		at := time.Unix(unix, 0).UTC()
		r := SessionRow{ID: id, Name: name, Command: []string{arg, name}, State: st, ProjectDir: dir, StartedAt: at,
			EndedAt: &at, TTY: tty, Usage: &Usage{CPUPercent: cpu, RSSBytes: unix, Procs: int(unix % 1000)}, Pool: name}
		assertEncodesAsJSON(t, []SessionRow{r, {}})
	})
}

func BenchmarkAppendRows(b *testing.B) {
	var rows []SessionRow
	for i := range 1000 {
		r := sampleRows()[0]
		r.ID, r.Name, r.ProjectDir = fmt.Sprintf("s%07d", i), fmt.Sprint(i), fmt.Sprintf("/tmp/p/%d", i)
		r.Usage = &Usage{CPUPercent: 0.1, RSSBytes: 1 << 20, Procs: 1}
		rows = append(rows, r)
	}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendRows(buf[:0], rows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(rows); err != nil {
				b.Fatal(err)
			}
		}
	})
}
