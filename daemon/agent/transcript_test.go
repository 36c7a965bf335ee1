package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The usage in testdata/claude/transcript.jsonl, a real Claude Code 2.1.328
// conversation of three requests over two processes (the second resumed
// it), against a local stand-in of the API that reported input 25, output
// 15, cache read 50 and cache write 100 per request.
var claudeGoldenUsage = Usage{InputTokens: 75, OutputTokens: 45, CacheReadTokens: 150, CacheWriteTokens: 300, CostUSD: 0.00273, CostKnown: true, EstimatedUSD: 0.00207}

// The usage in testdata/codex/rollout.jsonl, a real Codex 0.169 rollout of
// three turns (two of them resumed), whose stand-in API reported input 120
// (40 of it cached) and output 30 per turn.
var codexGoldenUsage = Usage{InputTokens: 240, CacheReadTokens: 120, OutputTokens: 90, EstimatedUSD: 0.001215}

func readAll(t *testing.T, tr *Transcript) TranscriptUpdate {
	t.Helper()
	u, err := tr.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestClaudeTranscriptGolden(t *testing.T) {
	tr := ClaudeCode.Transcript(filepath.Join("testdata", "claude", "transcript.jsonl"), TranscriptOptions{})
	u := readAll(t, tr)
	if u.Usage != claudeGoldenUsage {
		t.Errorf("usage %+v, want %+v", u.Usage, claudeGoldenUsage)
	}
	if len(u.Events) != 0 || len(u.Notices) != 0 {
		t.Errorf("events %v, notices %v: want none", u.Events, u.Notices)
	}
	if again := readAll(t, tr); again.Usage != claudeGoldenUsage {
		t.Errorf("a second read changed the usage: %+v", again.Usage)
	}
}

func TestCodexTranscriptGolden(t *testing.T) {
	tr := Codex.Transcript(filepath.Join("testdata", "codex", "rollout.jsonl"), TranscriptOptions{})
	u := readAll(t, tr)
	if u.Usage != codexGoldenUsage {
		t.Errorf("usage %+v, want %+v", u.Usage, codexGoldenUsage)
	}
	var kinds []string
	for _, e := range u.Events {
		kinds = append(kinds, fmt.Sprintf("%s:%s", e.Hook, e.State))
	}
	want := "session_meta: task_started:working task_complete:idle task_started:working task_complete:idle task_started:working task_complete:idle"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events %s\nwant %s", got, want)
	}
	if u.Events[0].ConversationID != "01a230cd-8f0e-7d00-95b3-c9119499aab2" || u.Events[0].Cwd != "/home/dev/src/app" {
		t.Errorf("session_meta event %+v", u.Events[0])
	}
	if e := u.Events[2]; !e.TurnEnded || e.Reply != "Done here" || e.TurnID == "" || e.At.IsZero() {
		t.Errorf("task_complete event %+v", e)
	}
	// Interactive: the turn's end waits for the next prompt; EventsSince
	// drops the history.
	last := u.Events[len(u.Events)-1].At
	tr = Codex.Transcript(filepath.Join("testdata", "codex", "rollout.jsonl"), TranscriptOptions{Interactive: true, EventsSince: last})
	u = readAll(t, tr)
	if len(u.Events) != 1 || u.Events[0].State != StateWaiting || u.Events[0].WaitingReason != WaitPrompt {
		t.Errorf("events since the last turn's end: %+v", u.Events)
	}
	if u.Usage != codexGoldenUsage {
		t.Errorf("EventsSince changed the usage: %+v", u.Usage)
	}
}

// TestTranscriptIncremental writes the real transcripts piece by piece, cut
// anywhere (mid-line too), and reads after each piece: the result is the
// same as one read of the whole, and each read reads only what was added.
func TestTranscriptIncremental(t *testing.T) {
	for _, tc := range []struct {
		adapter Adapter
		file    string
		want    Usage
	}{
		{ClaudeCode, filepath.Join("testdata", "claude", "transcript.jsonl"), claudeGoldenUsage},
		{Codex, filepath.Join("testdata", "codex", "rollout.jsonl"), codexGoldenUsage},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{1 << 20, 4096, 977, 61} {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			tr := tc.adapter.Transcript(path, TranscriptOptions{})
			events := 0
			for off := 0; off < len(data); off += step {
				if _, err := f.Write(data[off:min(off+step, len(data))]); err != nil {
					t.Fatal(err)
				}
				u := readAll(t, tr)
				events += len(u.Events)
				if tr.Offset() != int64(min(off+step, len(data))) {
					t.Fatalf("%s step %d: offset %d after %d bytes", tc.adapter.Name(), step, tr.Offset(), min(off+step, len(data)))
				}
			}
			f.Close()
			if got := tr.Usage(); got != tc.want {
				t.Errorf("%s step %d: usage %+v, want %+v", tc.adapter.Name(), step, got, tc.want)
			}
			if tc.adapter == Codex && events != 7 {
				t.Errorf("codex step %d: %d events, want 7", step, events)
			}
		}
	}
}

func assistantLine(id, request string, in, out, read, write int64) string {
	return fmt.Sprintf(`{"type":"assistant","requestRef":%q,"message":{"id":%q,"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}}`, request, id, in, out, read, write)
}

func TestClaudeTranscriptDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	tr := ClaudeCode.Transcript(path, TranscriptOptions{})
	ctx := context.Background()

	// Missing: an error that says so, usage zero.
	u, err := tr.Read(ctx)
	if !errors.Is(err, ErrNoTranscript) || !errors.Is(err, fs.ErrNotExist) || u.Usage != (Usage{}) {
		t.Fatalf("missing file: %v, %+v", err, u.Usage)
	}

	line1, line2 := assistantLine("m1", "r1", 10, 1, 0, 0), assistantLine("m1b", "r1b", 10, 1, 0, 0)
	// A line still being written is not counted until its newline comes.
	writeFile(t, path, line1+"\n"+line2[:40])
	if u := readAll(t, tr); u.Usage.InputTokens != 10 {
		t.Fatalf("after a cut line: %+v", u.Usage)
	}
	appendFile(t, path, line2[40:]+"\n")
	if u := readAll(t, tr); u.Usage.InputTokens != 20 {
		t.Fatalf("the cut line, completed: %+v", u.Usage)
	}
	// Another line of the same message and request replaces its count;
	// the same message id from another request counts again.
	appendFile(t, path, assistantLine("m1", "r1", 10, 5, 0, 0)+"\n"+assistantLine("m1", "r2", 1, 1, 0, 0)+"\n")
	if u := readAll(t, tr).Usage; u.InputTokens != 21 || u.OutputTokens != 7 {
		t.Fatalf("repeated message: %+v, want input 21 output 7", u)
	}
	// Lines that are not JSON are skipped; one that should have held usage
	// is reported.
	appendFile(t, path, "garbage\n\x00\x01\n{\"type\":\"assistant\",\"message\":{\"usage\":{\"input_tokens\":\"many\"}}}\n"+assistantLine("m2", "r3", 1, 0, 0, 0)+"\n")
	u = readAll(t, tr)
	if u.Usage.InputTokens != 22 || len(u.Notices) != 1 || !strings.Contains(u.Notices[0], "1 lines could not be read") {
		t.Fatalf("bad lines: %+v, notices %q", u.Usage, u.Notices)
	}
	// A complete last line without its newline is taken at the end.
	appendFile(t, path, assistantLine("m3", "r4", 1, 0, 0, 0))
	if u := readAll(t, tr); u.Usage.InputTokens != 23 {
		t.Fatalf("last line without a newline: %+v", u.Usage)
	}
	appendFile(t, path, "\n")
	if u := readAll(t, tr); u.Usage.InputTokens != 23 {
		t.Fatalf("its late newline counted it again: %+v", u.Usage)
	}

	// Truncated: read again from the start, the earlier usage kept.
	writeFile(t, path, assistantLine("m9", "r9", 100, 0, 0, 0)+"\n")
	u = readAll(t, tr)
	if u.Usage.InputTokens != 123 || len(u.Notices) != 1 || !strings.Contains(u.Notices[0], "shrank") {
		t.Fatalf("truncated: %+v, notices %q", u.Usage, u.Notices)
	}
	// Replaced by another file (renamed over it): the same.
	next := filepath.Join(dir, "next.jsonl")
	writeFile(t, next, strings.Repeat(assistantLine("m8", "r8", 1000, 0, 0, 0)+"\n", 3))
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	u = readAll(t, tr)
	if u.Usage.InputTokens != 1123 || len(u.Notices) != 1 || !strings.Contains(u.Notices[0], "replaced") {
		t.Fatalf("replaced: %+v, notices %q", u.Usage, u.Notices)
	}
	// Gone again: the usage so far stays.
	os.Remove(path)
	if u, err := tr.Read(ctx); !errors.Is(err, ErrNoTranscript) || u.Usage.InputTokens != 1123 {
		t.Fatalf("removed: %v, %+v", err, u.Usage)
	}
}

func TestClaudeTranscriptCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	writeFile(t, path, `{"type":"cost-state","totalCostUSD":0.5}`+"\n"+`{"type":"cost-state","totalCostUSD":-3}`+"\n")
	tr := ClaudeCode.Transcript(path, TranscriptOptions{})
	if u := readAll(t, tr).Usage; !u.CostKnown || u.CostUSD != 0.5 {
		t.Errorf("cost %+v: want 0.5, the negative one ignored", u)
	}
	appendFile(t, path, `{"type":"cost-state","totalCostUSD":1.25}`+"\n")
	if u := readAll(t, tr).Usage; u.CostUSD != 1.25 {
		t.Errorf("cost %v: want the latest total, 1.25", u.CostUSD)
	}
}

// TestClaudeTranscriptOverlong: an assistant line larger than the line
// limit (a Write of a big file) still counts, and is not held in memory.
func TestClaudeTranscriptOverlong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	big := strings.Repeat("x", MaxTranscriptLine+1<<20)
	line := `{"parentUuid":"p","message":{"id":"msg_big","type":"message","role":"assistant","content":[{"type":"tool_use","name":"Write","input":{"content":"` + big +
		`\"usage\":{\"input_tokens\":999}"}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"cache_creation_input_tokens":3,"cache_read_input_tokens":2,"output_tokens":4000}},"requestRef":"rbig","type":"assistant","uuid":"u"}`
	writeFile(t, path, assistantLine("m1", "r1", 1, 1, 0, 0)+"\n"+line+"\n"+assistantLine("m2", "r2", 1, 1, 0, 0)+"\n")
	tr := ClaudeCode.Transcript(path, TranscriptOptions{})
	u := readAll(t, tr)
	want := Usage{InputTokens: 9, OutputTokens: 4002, CacheReadTokens: 2, CacheWriteTokens: 3, EstimatedUSD: 0.000036}
	if u.Usage != want {
		t.Errorf("usage %+v, want %+v", u.Usage, want)
	}
	if len(u.Notices) != 1 || !strings.Contains(u.Notices[0], "longer than 8 MiB") {
		t.Errorf("notices %q", u.Notices)
	}
	if cap(tr.pending) > 1<<20 {
		t.Errorf("the reader holds %d bytes after the long line", cap(tr.pending))
	}
}

func TestTranscriptNotAFile(t *testing.T) {
	tr := ClaudeCode.Transcript(t.TempDir(), TranscriptOptions{})
	if _, err := tr.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestTranscriptCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	writeFile(t, path, assistantLine("m", "r", 1, 1, 1, 1)+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr := ClaudeCode.Transcript(path, TranscriptOptions{})
	if _, err := tr.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if u := readAll(t, tr); u.Usage.Tokens() != 4 {
		t.Errorf("after the cancelled read: %+v", u.Usage)
	}
}

func TestCodexTranscriptAborted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	writeFile(t, path, `{"timestamp":"`+now+`","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`+"\n"+
		`{"timestamp":"`+now+`","type":"event_msg","payload":{"type":"token_count","info":null}}`+"\n"+
		`{"timestamp":"`+now+`","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}`+"\n"+
		`{"timestamp":"`+now+`","type":"response_item","payload":{"type":"message","content":[{"text":"task_complete"}]}}`+"\n")
	u := readAll(t, Codex.Transcript(path, TranscriptOptions{Interactive: true}))
	if len(u.Events) != 2 || !u.Events[1].TurnEnded || u.Events[1].EndReason != "interrupted" || u.Events[1].State != StateWaiting {
		t.Errorf("events %+v", u.Events)
	}
	if u.Usage != (Usage{}) {
		t.Errorf("a token_count without info counted: %+v", u.Usage)
	}
}

func TestUsage(t *testing.T) {
	a := Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 20, CostUSD: 0.5, CostKnown: true}
	b := Usage{InputTokens: 1, OutputTokens: 1, CacheReadTokens: 1, CacheWriteTokens: 1}
	if got := a.Add(b).Since(a); got.Tokens() != 4 || got.CostUSD != 0 {
		t.Errorf("Since: %+v", got)
	}
	if got := b.Since(a); got.Tokens() != 0 {
		t.Errorf("Since below zero: %+v", got)
	}
	huge := Usage{InputTokens: 1 << 62, OutputTokens: 1 << 62, CacheReadTokens: 1 << 62}
	if huge.Tokens() < 0 || huge.Add(huge).InputTokens < 0 {
		t.Errorf("overflow: %d", huge.Tokens())
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// FuzzClaudeTranscript reads arbitrary content, whole and in two pieces, as
// a Claude Code transcript: no panic, no negative count.
func FuzzClaudeTranscript(f *testing.F) {
	fuzzTranscript(f, ClaudeCode, filepath.Join("testdata", "claude", "transcript.jsonl"))
}

// FuzzCodexTranscript does the same for a Codex rollout.
func FuzzCodexTranscript(f *testing.F) {
	fuzzTranscript(f, Codex, filepath.Join("testdata", "codex", "rollout.jsonl"))
}

func fuzzTranscript(f *testing.F, a Adapter, seed string) {
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := 0; i+3 <= len(lines); i += 3 {
		f.Add(bytes.Join(lines[i:i+3], nil), uint16(17))
	}
	f.Add([]byte(assistantLine("m", "r", -5, 1, 2, 3)+"\n"), uint16(3))
	f.Add([]byte(`{"type":"assistant","message":{"usage":{"input_tokens":9223372036854775807,"output_tokens":9223372036854775807}}}`+"\n"), uint16(0))
	f.Fuzz(func(t *testing.T, content []byte, cut uint16) {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		at := int(cut) % (len(content) + 1)
		if err := os.WriteFile(path, content[:at], 0o600); err != nil {
			t.Fatal(err)
		}
		tr := a.Transcript(path, TranscriptOptions{Interactive: cut%2 == 0})
		if _, err := tr.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The rest is appended, as an agent appends.
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(content[at:])
		fh.Close()
		u, err := tr.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if u.Usage.InputTokens < 0 || u.Usage.OutputTokens < 0 || u.Usage.CacheReadTokens < 0 || u.Usage.CacheWriteTokens < 0 || u.Usage.CostUSD < 0 || u.Usage.Tokens() < 0 {
			t.Fatalf("negative usage %+v", u.Usage)
		}
		for _, e := range u.Events {
			if e.ConversationID != "" {
				if _, err := ParseConversationID(e.ConversationID); err != nil {
					t.Fatalf("event with a bad conversation id %q", e.ConversationID)
				}
			}
		}
	})
}

// TestClaudeTranscriptRetries reads Claude Code 2.1.328's records of
// requests to a stand-in API that answered 529 twice, then a response: two
// retries, then the answer that ends them.
func TestClaudeTranscriptRetries(t *testing.T) {
	tr := ClaudeCode.Transcript(filepath.Join("testdata", "claude", "retries.jsonl"), TranscriptOptions{})
	u := readAll(t, tr)
	if len(u.Events) != 3 {
		t.Fatalf("events %+v, want two retries and an answer", u.Events)
	}
	for i, ev := range u.Events[:2] {
		r := ev.Retry
		if r == nil || r.Attempt != i+1 || r.Max != 10 || r.Reason != "529 Overloaded" || ev.At.IsZero() || !r.Next.After(ev.At) {
			t.Errorf("retry %d: %+v at %v", i+1, r, ev.At)
		}
	}
	if !u.Events[2].Answered || u.Events[2].Retry != nil {
		t.Errorf("after the retries: %+v, want the answer", u.Events[2])
	}
	if len(u.Notices) != 0 {
		t.Errorf("notices %v", u.Notices)
	}
}
