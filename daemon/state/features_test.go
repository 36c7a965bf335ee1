package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadFeatures(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []Feature
	}{
		{"array, numeric ids", `[
  {"id": 1, "description": "Login", "priority": 2, "passes": true},
  {"id": 2, "description": "Logout", "priority": 1, "passes": false}
]`, []Feature{
			{ID: IntTaskID(1), Description: "Login", Priority: NumberPriority(2), Passes: true},
			{ID: IntTaskID(2), Description: "Logout", Priority: NumberPriority(1)},
		}},
		{"object, string ids and word priorities", `{"project": "shop", "features": [
  {"id": "cart-1", "description": "Add item", "priority": "high", "passes": false},
  {"id": "cart-2", "description": "Remove item", "priority": "Low"}
]}`, []Feature{
			{ID: StringTaskID("cart-1"), Description: "Add item", Priority: mustPriority(t, "high")},
			{ID: StringTaskID("cart-2"), Description: "Remove item", Priority: mustPriority(t, "Low")},
		}},
		{"anthropic style: no ids, steps, category", `[{"category": "functional", "description": "New chat button", "steps": ["open app", "click new chat"], "passes": false}]`,
			[]Feature{{Description: "New chat button", Category: "functional", Steps: []string{"open app", "click new chat"}}}},
		{"lenient descriptive fields", `[{"id": 3, "description": 42, "category": {"x": 1}, "steps": "see wiki", "passes": true, "extra": [1,2]}]`,
			[]Feature{{ID: IntTaskID(3), Description: "42", Passes: true}}},
		{"null priority and id", `[{"id": null, "description": "x", "priority": null, "passes": null}]`,
			[]Feature{{Description: "x"}}},
		{"empty array", `[]`, []Feature{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), DefaultFeatureList)
			writeTestFile(t, path, tt.content)
			got, err := LoadFeatures(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("marshal: %v", err)
			}
		})
	}
}

func mustPriority(t *testing.T, s string) Priority {
	t.Helper()
	p, err := ParsePriority(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFeaturesMalformed(t *testing.T) {
	tests := []struct {
		name, content string
		// want are substrings of the error after "feature list PATH".
		want []string
	}{
		{"empty", "", []string{"empty"}},
		{"truncated", "[\n  {\"id\": 1, \"passes\": tr", []string{"truncated"}},
		{"syntax error", "[\n  {\"id\": 1,, \"passes\": true}\n]", []string{":2:12:", "invalid character ','"}},
		{"passes wrongly typed", "[\n  {\"id\": 1, \"passes\": true},\n  {\"id\": 2, \"passes\": \"yes\"}\n]", []string{":3:", "feature #2", "passes"}},
		{"bad id", "[{\"id\": [1]}]", []string{":1:2:", "feature #1", "task id"}},
		{"unknown priority", "{\"features\": [\n {\"id\": 1, \"priority\": \"asap\"}]}", []string{":2:2:", "feature #1", `unknown priority "asap"`}},
		{"not a list", `"features"`, []string{"want an array of features"}},
		{"object without features", `{"items": []}`, []string{`no "features" array`}},
		{"features not an array", `{"features": {"id": 1}}`, []string{`"features" must be an array, got an object`}},
		{"features twice", `{"features": [], "features": []}`, []string{"twice"}},
		{"trailing data", `[] []`, []string{":1:4:", "after top-level value"}},
		{"item not an object", `[1]`, []string{"feature #1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DefaultFeatureList)
			writeTestFile(t, path, tt.content)
			_, err := LoadFeatures(path)
			var fe *FeatureListError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FeatureListError", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "feature list "+path) {
				t.Errorf("error %q does not start with the path", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			// The user's file is never moved or changed.
			if got := readTestFile(t, path); got != tt.content {
				t.Errorf("file changed: got %q, want %q", got, tt.content)
			}
			if kept := corruptCopies(t, path); len(kept) != 0 {
				t.Errorf("got corrupt copies %v, want none", kept)
			}
		})
	}
}

func TestLoadFeaturesMissing(t *testing.T) {
	_, err := LoadFeatures(filepath.Join(t.TempDir(), DefaultFeatureList))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want an error wrapping fs.ErrNotExist", err)
	}
}

func TestPriorityJSON(t *testing.T) {
	tests := []struct {
		in       string
		wantRank float64
	}{
		{`1`, 1}, {`2.5`, 2.5}, {`-1`, -1}, {`"critical"`, 0}, {`"high"`, 1}, {`"Medium"`, 2},
		{`"low"`, 3}, {`"P2"`, 2}, {`"4"`, 4},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var p Priority
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatal(err)
			}
			if r, ok := p.Rank(); !ok || r != tt.wantRank {
				t.Errorf("rank: got %v, %v, want %v, true", r, ok, tt.wantRank)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.in {
				t.Errorf("marshal: got %s, want %s", out, tt.in)
			}
		})
	}
}

func TestNextTasks(t *testing.T) {
	fs := mustParse(t, `[
  {"id": 1, "description": "done", "priority": 1, "passes": true},
  {"id": 2, "description": "no priority A"},
  {"id": 3, "description": "low", "priority": "low"},
  {"id": 4, "description": "p1 first", "priority": 1},
  {"id": "five", "description": "no priority B"},
  {"id": 6, "description": "high = 1, after 4 in file order", "priority": "high"},
  {"id": 7, "description": "urgent 0", "priority": 0}
]`)
	tests := []struct {
		n    int
		want []string
	}{
		{1, []string{"7"}},
		{3, []string{"7", "4", "6"}},
		{0, []string{"7", "4", "6", "3", "2", "five"}},
		{100, []string{"7", "4", "6", "3", "2", "five"}},
	}
	for _, tt := range tests {
		var got []string
		for _, f := range NextTasks(fs, tt.n) {
			got = append(got, f.ID.String())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("n=%d: got %v, want %v", tt.n, got, tt.want)
		}
	}
	if got := NextTasks(mustParse(t, `[{"id": 1, "passes": true}]`), 1); len(got) != 0 {
		t.Errorf("all passing: got %v, want none", got)
	}
}

func TestProgressAndCompleted(t *testing.T) {
	before := mustParse(t, `[{"id": 1, "passes": true}, {"id": 2, "passes": false}, {"id": "x", "passes": false}, {"description": "no id", "passes": false}]`)
	after := mustParse(t, `[{"id": 1, "passes": true}, {"id": 2, "passes": true}, {"id": "x", "passes": false}, {"description": "no id", "passes": true}, {"id": 9, "passes": true}]`)
	if got, want := Progress(after), (FeatureProgress{Done: 4, Total: 5, Pct: 80}); got != want {
		t.Errorf("progress: got %+v, want %+v", got, want)
	}
	if got, want := Progress(nil), (FeatureProgress{}); got != want {
		t.Errorf("progress of none: got %+v, want %+v", got, want)
	}
	got := Completed(before, after)
	want := []TaskID{IntTaskID(2), StringTaskID("no id"), IntTaskID(9)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("completed: got %v, want %v", got, want)
	}
}

func mustParse(t *testing.T, s string) []Feature {
	t.Helper()
	fs, err := ParseFeatures([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
