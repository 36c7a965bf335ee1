package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

func FuzzReadSessionState(f *testing.F) {
	good, _ := json.Marshal(fullState())
	for _, seed := range []string{
		string(good), "", "{}", "null", "[]", `{"progress_pct":"x"}`, `{"progress_pct":1e400}`,
		`{"last_session":{"summary":"s","completed_tasks":[27,"a",1.5e3],"timestamp":"2025-11-20T10:30:00"}}`,
		`{"last_session":{"timestamp":"2025-11-20T10:30:00+25:00"}}`,
		`{"next_actions":["a","b","c","d","e","f"],"active_blockers":[{"id":1,"question":"q","priority":"high"}]}`,
		"{\"next_actions\":[\"\xff\xfe\"]}", `{"last_session": {"summary": "half`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		project := t.TempDir()
		writeTestFile(t, SessionStatePath(project), string(data))
		s, err := LoadSessionState(project)
		if err != nil {
			if s != nil {
				t.Fatalf("got state %+v with error %v, want nil", s, err)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want only corrupt-file errors", err)
			}
			return
		}
		if s == nil {
			t.Fatal("got nil state and nil error for an existing file")
		}
		// A loaded state re-marshals, and decodes back to the same bytes
		// (in memory: SaveSessionState's fsyncs would starve the fuzzer).
		first, err := marshalJSON(s)
		if err != nil {
			t.Fatalf("marshal a loaded state: %v", err)
		}
		var again SessionState
		if err := decodeJSON(first, &again); err != nil {
			t.Fatalf("decode %s: %v", first, err)
		}
		again.Bound()
		if second, _ := marshalJSON(&again); !bytes.Equal(second, first) {
			t.Fatalf("not stable:\n%s\nthen\n%s", first, second)
		}
		_ = RestoreSummary(s, testNow)
		_ = BuildContext(ContextInput{State: s, Now: testNow})
	})
}

func FuzzLoadFeatures(f *testing.F) {
	for _, seed := range []string{
		`[{"id": 1, "description": "a", "priority": 2, "passes": true}]`,
		`{"features": [{"id": "x", "priority": "high"}, {"id": 2.5e1, "priority": "P3"}]}`,
		`[{"category": "functional", "description": "d", "steps": ["a"], "passes": false}]`,
		``, `[`, `{}`, `{"features": {}}`, `[1]`, `[{"id": []}]`, `[{"priority": "asap"}]`, `[] []`,
		`[{"priority": 1e999}]`, `{"a": [1, {"b": null}], "features": []}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), DefaultFeatureList)
		writeTestFile(t, path, string(data))
		fs, err := LoadFeatures(path)
		if got := readTestFile(t, path); got != string(data) {
			t.Fatal("the feature list was changed")
		}
		if err != nil {
			var fe *FeatureListError
			if fs != nil || !errors.As(err, &fe) {
				t.Fatalf("got %v, %v, want nil and a *FeatureListError", fs, err)
			}
			return
		}
		out, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := ParseFeatures(out)
		if err != nil {
			t.Fatalf("reparse %s: %v", out, err)
		}
		if out2, _ := json.Marshal(back); !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\nthen\n%s", out, out2)
		}
		Progress(fs)
		NextTasks(fs, 3)
		Completed(fs, back)
	})
}

func FuzzLoadHandoff(f *testing.F) {
	good, _ := json.Marshal(fullHandoff())
	for _, seed := range []string{
		string(good), "", "{}", "null", `{"exit_code": "one"}`, `{"ended_at": "2026-11-29T10:00:00Z", "exit_code": null}`,
		`{"command": ["a", 1]}`, `{"log_tail": ["` + "\xff" + `"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), HandoffFile)
		writeTestFile(t, path, string(data))
		h, err := LoadHandoff(path)
		if err != nil {
			if h != nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %+v, %v, want nil and a corrupt-file error", h, err)
			}
			return
		}
		h.Bound()
		first, err := marshalJSON(h)
		if err != nil {
			t.Fatalf("marshal a loaded handoff: %v", err)
		}
		var again Handoff
		if err := decodeJSON(first, &again); err != nil {
			t.Fatalf("decode %s: %v", first, err)
		}
		again.Bound()
		if second, _ := marshalJSON(&again); !bytes.Equal(second, first) {
			t.Fatalf("not stable:\n%s\nthen\n%s", first, second)
		}
		_ = BuildContext(ContextInput{Previous: h, Now: testNow})
	})
}
