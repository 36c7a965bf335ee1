package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkClaudeParseHook is the adapter's share of a hook's way to the
// record (DESIGN: hook to record ≤ 20 ms p99, the hook process included).
func BenchmarkClaudeParseHook(b *testing.B) {
	payload, err := os.ReadFile(filepath.Join("testdata", "claude", "hooks", "post-tool-use.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClaudeCode.ParseHook(payload, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaudeParseHookLarge: a PostToolUse of a Read of a 1 MiB file.
func BenchmarkClaudeParseHookLarge(b *testing.B) {
	payload := []byte(`{"session_id":"3f0c0e6a-1111-4222-8333-444455556666","transcript_path":"/home/dev/.claude/projects/x/3f0c0e6a-1111-4222-8333-444455556666.jsonl","cwd":"/home/dev/src/app","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/x"},"tool_response":{"content":"` + strings.Repeat("x", 1<<20) + `"}}`)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClaudeCode.ParseHook(payload, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranscriptAppend: one Read after one assistant line was
// appended to a transcript already read (the cost per turn).
func BenchmarkTranscriptAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tr := ClaudeCode.Transcript(path, TranscriptOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		f.WriteString(assistantLine(fmt.Sprintf("m%d", i), "r", 25, 15, 50, 100) + "\n")
		if _, err := tr.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranscriptFirstRead reads a 16 MiB Claude transcript from the
// start (a resumed conversation's history).
func BenchmarkTranscriptFirstRead(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "claude", "transcript.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "t.jsonl")
	var big []byte
	for len(big) < 16<<20 {
		big = append(big, data...)
	}
	if err := os.WriteFile(path, big, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(big)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClaudeCode.Transcript(path, TranscriptOptions{}).Read(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
