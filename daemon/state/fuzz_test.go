package state

import (
	"bytes"
	"encoding/json"
	"errors"
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
	// The decoding is fuzzed in memory, exactly as LoadSessionState runs it
	// after reading the file: moving a corrupt file aside costs a directory
	// fsync, which would cut the fuzzer to a few dozen runs a second. The file
	// handling is covered by TestLoadSessionStateCorrupt.
	f.Fuzz(func(t *testing.T, data []byte) {
		s := new(SessionState)
		if err := decodeJSON(data, s); err != nil {
			return
		}
		BoundSessionState(s)
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
		BoundSessionState(&again)
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
		fs, err := ParseFeatures(data)
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
	// In memory, as LoadHandoff decodes; see FuzzReadSessionState.
	f.Fuzz(func(t *testing.T, data []byte) {
		h := new(Handoff)
		if err := decodeJSON(data, h); err != nil {
			return
		}
		BoundHandoff(h)
		first, err := marshalJSON(h)
		if err != nil {
			t.Fatalf("marshal a loaded handoff: %v", err)
		}
		var again Handoff
		if err := decodeJSON(first, &again); err != nil {
			t.Fatalf("decode %s: %v", first, err)
		}
		BoundHandoff(&again)
		if second, _ := marshalJSON(&again); !bytes.Equal(second, first) {
			t.Fatalf("not stable:\n%s\nthen\n%s", first, second)
		}
		_ = BuildContext(ContextInput{Previous: h, Now: testNow})
	})
}
