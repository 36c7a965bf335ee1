package state

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// indentCases are compact JSON texts of every shape the indent meets.
var indentCases = []string{
	`{}`, `[]`, `null`, `true`, `-1.5e-7`, `""`, `"a"`,
	`{"a":1}`, `[1,2,3]`, `{"a":{},"b":[],"c":[{}],"d":[[]],"e":{"f":{"g":[]}}}`,
	`[{"a":[1,{"b":null}]},[],{},"x",false]`,
	`{"s":"a \"quoted\" word, a [bracket] and {brace}: a:b,c","t":"\\","u":"\\\"","v":"\u003cb\u003e \u0026 \u2028"}`,
	`{"é":"日本語","":""}`, `{"a":"ends in a backslash \\\\"}`,
	`[0,-0,1e400,123456789012345678901234567890]`,
}

// TestIndentMatchesEncodingJSON: the indent is json.Indent's, byte for byte.
func TestIndentMatchesEncodingJSON(t *testing.T) {
	for _, c := range indentCases {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(c), "", jsonIndent); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if got := appendIndented([]byte("prefix"), []byte(c)); string(got) != "prefix"+want.String() {
			t.Errorf("indent of %s:\n%s\nwant:\n%s", c, got, want.String())
		}
	}
}

// TestMarshalJSONOfTheLargestFiles: the encoding is what
// json.MarshalIndent gives, with a trailing newline, for the largest files
// the daemon writes: a record with its spec, a handoff, a session state.
func TestMarshalJSONOfTheLargestFiles(t *testing.T) {
	rec := fullRecord()
	for name, v := range map[string]any{"record": rec, "handoff": fullHandoff(), "session state": fullState()} {
		want, err := json.MarshalIndent(v, "", jsonIndent)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

// fullRecord is a session record with its spec and most of its fields
// set, strings among them that JSON escapes.
func fullRecord() *ipc.Session {
	now := time.Date(2026, 12, 6, 10, 30, 0, 123456789, time.UTC)
	code := 3
	spec := config.Spec{
		Command: []string{"claude", "--print", `a "prompt" with <tags> & {braces}`},
		Timeout: config.Duration{Duration: 4 * time.Hour}, WarnBefore: config.Duration{Duration: 10 * time.Minute},
		StopGrace: config.Duration{Duration: 30 * time.Second}, Checkpoint: "*/15 * * * *", Restart: "on-failure",
		MaxRestarts: 3, Preflight: []string{"make check"}, MaxCostUSD: 2.5, CheckpointOn: []string{},
		Services: []config.Service{{Name: "web", Command: []string{"npm", "run", "dev"}}},
	}
	return &ipc.Session{
		ID: "abcd1234", Name: "web", ProjectDir: "/home/ana/web", ProjectID: "0123456789ab",
		Command: spec.Command, State: ipc.StateEnded, PID: 4242, StartedAt: now, EndedAt: &now,
		Deadline: now.Add(time.Hour), WarnAt: now.Add(50 * time.Minute), EndReason: "stopped",
		ExitCode: &code, Signal: "SIGTERM", FilesChanged: []string{"a.go", "dir/b.go"},
		LogPath: "/var/lib/sessiond/sessions/abcd1234/output.log", Seq: 7, UID: 1000,
		Warnings: []string{}, EnvKeys: []string{"A", "B"}, Spec: &spec,
		Cgroup: &ipc.Cgroup{Path: "/sys/fs/cgroup/sessiond/abcd1234"},
	}
}

// FuzzIndent: for any JSON text, the indent of its compact form is
// json.Indent's.
func FuzzIndent(f *testing.F) {
	for _, c := range indentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", jsonIndent); err != nil {
			t.Fatalf("json.Indent of what json.Compact wrote: %v", err)
		}
		if got := appendIndented(nil, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indent of %q:\n%q\nwant:\n%q", compact.Bytes(), got, want.Bytes())
		}
	})
}

// BenchmarkMarshalRecord: the encoding of a session's record, which a
// burst of ends writes three times per session.
func BenchmarkMarshalRecord(b *testing.B) {
	now := time.Now()
	spec := config.Spec{Command: []string{"sleep", "1000"}, Timeout: config.Duration{Duration: 4 * time.Hour},
		Checkpoint: "*/15 * * * *", Restart: "never", StopGrace: config.Duration{Duration: 10 * time.Second}}
	rec := &ipc.Session{ID: "abcd1234", Name: "p1", ProjectDir: "/tmp/p/1", ProjectID: "0123456789ab",
		Command: spec.Command, State: ipc.StateStopping, PID: 4242, StartedAt: now, Deadline: now.Add(4 * time.Hour),
		WarnAt: now.Add(3 * time.Hour), LogPath: "/var/lib/sessiond/sessions/abcd1234/output.log", Seq: 3,
		BootID: "ee262791-2b87-4536-92bd-a1e2641a278b", StartTime: 3850016, PIDIno: 7283068, Spec: &spec,
		Cgroup: &ipc.Cgroup{Path: "/sys/fs/cgroup/unified/sessiond-22a020fe8a62/abcd1234"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := marshalJSON(rec); err != nil {
			b.Fatal(err)
		}
	}
}
