package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultFeatureList is the feature list's file name in a project when the
// spec names none.
const DefaultFeatureList = "feature_list.json"

// Feature is one item of a project's feature list.
type Feature struct {
	// ID is the item's id, a number or a string; zero when the list has none.
	ID          TaskID   `json:"id,omitzero"`
	Description string   `json:"description"`
	Category    string   `json:"category,omitempty"`
	Priority    Priority `json:"priority,omitzero"`
	Passes      bool     `json:"passes"`
	Steps       []string `json:"steps,omitempty"`
}

// Key returns what identifies f across two readings of a list: its id, or
// its description (as a string TaskID) in lists whose items have no id.
func (f Feature) Key() TaskID {
	if !f.ID.IsZero() {
		return f.ID
	}
	return StringTaskID(f.Description)
}

// Priority is a feature's optional priority: a number, lower meaning more
// urgent as in the seed, or one of the words critical (0), high (1),
// medium (2) and low (3), or P0–P9. The zero Priority means "not set", which
// ranks after every set one. It marshals back as it came.
type Priority struct {
	rank  float64
	text  string
	set   bool
	label bool
}

var priorityWords = map[string]float64{"critical": 0, "urgent": 0, "high": 1, "medium": 2, "normal": 2, "low": 3}

// NumberPriority returns the numeric priority n.
func NumberPriority(n float64) Priority {
	return Priority{rank: n, text: strconv.FormatFloat(n, 'g', -1, 64), set: true}
}

// ParsePriority reads a priority word ("high", "P1") or a number in a string.
func ParsePriority(s string) (Priority, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	if r, ok := priorityWords[w]; ok {
		return Priority{rank: r, text: s, set: true, label: true}, nil
	}
	if len(w) == 2 && w[0] == 'p' && w[1] >= '0' && w[1] <= '9' {
		return Priority{rank: float64(w[1] - '0'), text: s, set: true, label: true}, nil
	}
	if n, err := strconv.ParseFloat(w, 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
		return Priority{rank: n, text: s, set: true, label: true}, nil
	}
	return Priority{}, fmt.Errorf("unknown priority %q: want a number (lower is more urgent), critical, high, medium, low or P0-P9", s)
}

// Rank returns the priority's rank (lower is more urgent) and whether one was
// set.
func (p Priority) Rank() (float64, bool) { return p.rank, p.set }

// IsZero reports whether no priority was set.
func (p Priority) IsZero() bool { return !p.set }

// String returns the priority as written in the list, or "" if none.
func (p Priority) String() string { return p.text }

// MarshalJSON writes the priority as it was read: a number or a string.
func (p Priority) MarshalJSON() ([]byte, error) {
	switch {
	case !p.set:
		return []byte("null"), nil
	case p.label:
		return json.Marshal(p.text)
	}
	return []byte(p.text), nil
}

// UnmarshalJSON accepts a number, a priority word, or null (not set).
func (p *Priority) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		*p = Priority{}
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		q, err := ParsePriority(s)
		if err != nil {
			return err
		}
		*p = q
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("priority must be a number or a word such as \"high\", got %.40s", data)
	}
	f, err := n.Float64()
	if err != nil {
		return fmt.Errorf("priority %s: %w", n, err)
	}
	*p = Priority{rank: f, text: string(n), set: true}
	return nil
}

// FeatureListError reports a feature list that could not be read, with the
// position of the problem where it is known (Line 0 when not).
type FeatureListError struct {
	Path         string
	Line, Column int
	// Index is the 1-based position of the item at fault, or 0.
	Index int
	Err   error
}

// Error says which file, where in it, and what is wrong.
func (e *FeatureListError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "feature list %s", e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Index > 0 {
		fmt.Fprintf(&b, ": feature #%d", e.Index)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *FeatureListError) Unwrap() error { return e.Err }

// LoadFeatures reads the project's feature list rel (relative to the
// project and confined to it; "" means DefaultFeatureList) with the
// owner's rights: a JSON array of features, or an object whose "features"
// member is one, of at most MaxFeatureListSize bytes. Fields other than id,
// description, category, priority, passes and steps are ignored, as are
// category and steps of an unexpected type. A missing file gives an error
// wrapping fs.ErrNotExist; a path leaving the project, ErrOutsideProject; a
// FIFO or device, ErrFileType. A malformed list gives a *FeatureListError
// naming the line and column; the file belongs to the user and is never
// moved or changed.
func (p *Project) LoadFeatures(rel string) ([]Feature, error) {
	if rel == "" {
		rel = DefaultFeatureList
	}
	data, err := p.ReadFile(rel, MaxFeatureListSize)
	if err != nil {
		return nil, fmt.Errorf("load feature list: %w", err)
	}
	return parseFeatureFile(data, p.display(rel))
}

// LoadFeatures reads the feature list at path with the caller's own rights,
// following symlinks; otherwise as Project.LoadFeatures.
func LoadFeatures(path string) ([]Feature, error) {
	data, _, err := readInput(path, MaxFeatureListSize)
	if err != nil {
		return nil, fmt.Errorf("load feature list: %w", err)
	}
	return parseFeatureFile(data, path)
}

func parseFeatureFile(data []byte, path string) ([]Feature, error) {
	fs, err := ParseFeatures(data)
	if err != nil {
		var fe *FeatureListError
		if errors.As(err, &fe) {
			fe.Path = path
			return nil, fe
		}
		return nil, &FeatureListError{Path: path, Err: err}
	}
	return fs, nil
}

// ParseFeatures parses the content of a feature list as LoadFeatures does;
// errors are *FeatureListError without a path.
func ParseFeatures(data []byte) ([]Feature, error) {
	p := featureParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	fs, err := p.parse()
	if err != nil {
		return nil, p.fail(err)
	}
	return fs, nil
}

type featureParser struct {
	data  []byte
	dec   *json.Decoder
	at    int64 // offset of the value being decoded, for errors without one
	index int
}

func (p *featureParser) fail(err error) *FeatureListError {
	var fe *FeatureListError
	if errors.As(err, &fe) {
		return fe
	}
	off := p.at
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // Offset counts the offending byte
	case errors.As(err, &typ):
		off = p.at + typ.Offset
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		off = int64(len(p.data))
		err = fmt.Errorf("truncated JSON: %w", err)
	}
	off = max(0, min(off, int64(len(p.data))))
	line, col := lineCol(p.data, off)
	return &FeatureListError{Line: line, Column: col, Index: p.index, Err: err}
}

func (p *featureParser) parse() ([]Feature, error) {
	if len(bytes.TrimSpace(p.data)) == 0 {
		return nil, errors.New("file is empty")
	}
	// Check the syntax of the whole document first: the scanner reports
	// offsets into the whole input, which the streaming decoder does not.
	if err := json.Unmarshal(p.data, new(json.RawMessage)); err != nil {
		return nil, err
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	var fs []Feature
	switch tok {
	case json.Delim('['):
		if fs, err = p.array(); err != nil {
			return nil, err
		}
	case json.Delim('{'):
		if fs, err = p.object(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("want an array of features or an object with a \"features\" array, got %v", tokenKind(tok))
	}
	p.at = p.dec.InputOffset()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the feature list")
	}
	return fs, nil
}

func (p *featureParser) object() ([]Feature, error) {
	var fs []Feature
	found := false
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if key != "features" {
			var skip json.RawMessage
			if err := p.dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		p.at = p.skipSpace(p.dec.InputOffset())
		if found {
			return nil, errors.New("\"features\" appears twice")
		}
		found = true
		tok, err = p.dec.Token()
		if err != nil {
			return nil, err
		}
		if tok != json.Delim('[') {
			return nil, fmt.Errorf("\"features\" must be an array, got %v", tokenKind(tok))
		}
		if fs, err = p.array(); err != nil {
			return nil, err
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, err
	}
	if !found {
		return nil, errors.New("the object has no \"features\" array")
	}
	return fs, nil
}

// featureJSON is the wire form of a feature: the fields that decide progress
// are strict, the descriptive ones lenient.
type featureJSON struct {
	ID          TaskID          `json:"id"`
	Description json.RawMessage `json:"description"`
	Category    json.RawMessage `json:"category"`
	Priority    Priority        `json:"priority"`
	Passes      *bool           `json:"passes"`
	Steps       json.RawMessage `json:"steps"`
}

func (p *featureParser) array() ([]Feature, error) {
	fs := []Feature{}
	for p.dec.More() {
		p.index++
		p.at = p.skipSpace(p.dec.InputOffset())
		var raw json.RawMessage
		if err := p.dec.Decode(&raw); err != nil {
			return nil, err
		}
		var w featureJSON
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		f := Feature{ID: w.ID, Priority: w.Priority}
		if w.Passes != nil {
			f.Passes = *w.Passes
		}
		if json.Unmarshal(w.Category, &f.Category) != nil {
			f.Category = ""
		}
		if json.Unmarshal(w.Steps, &f.Steps) != nil {
			f.Steps = nil
		}
		if len(w.Description) > 0 && json.Unmarshal(w.Description, &f.Description) != nil {
			// A description is for people; show what it is rather than fail.
			f.Description = string(bytes.TrimSpace(w.Description))
		}
		fs = append(fs, f)
	}
	p.index = 0
	if _, err := p.dec.Token(); err != nil { // ']'
		return nil, err
	}
	return fs, nil
}

// skipSpace moves off past the whitespace and separators before a value.
func (p *featureParser) skipSpace(off int64) int64 {
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// FeatureProgress counts passing features.
type FeatureProgress struct {
	Done  int     `json:"done"`
	Total int     `json:"total"`
	Pct   float64 `json:"pct"`
}

// Progress returns how many features pass, of how many, and the percentage.
func Progress(fs []Feature) FeatureProgress {
	p := FeatureProgress{Total: len(fs)}
	for _, f := range fs {
		if f.Passes {
			p.Done++
		}
	}
	if p.Total > 0 {
		p.Pct = float64(p.Done) * 100 / float64(p.Total)
	}
	return p
}

// NextTasks returns up to n features that do not pass yet, most urgent
// priority first, in file order among equals; features without a priority
// come last. n <= 0 means all of them.
func NextTasks(fs []Feature, n int) []Feature {
	var todo []Feature
	for _, f := range fs {
		if !f.Passes {
			todo = append(todo, f)
		}
	}
	slices.SortStableFunc(todo, func(a, b Feature) int {
		ra, oka := a.Priority.Rank()
		rb, okb := b.Priority.Rank()
		switch {
		case oka && okb:
			if ra < rb {
				return -1
			} else if ra > rb {
				return 1
			}
			return 0
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	if n > 0 && len(todo) > n {
		todo = todo[:n]
	}
	return todo
}

// Completed returns the keys (see Feature.Key) of the features that pass in
// after and did not pass in before, in the order of after. A feature that
// is new in after and passes counts as completed.
func Completed(before, after []Feature) []TaskID {
	passed := make(map[TaskID]bool, len(before))
	for _, f := range before {
		if f.Passes {
			passed[f.Key()] = true
		}
	}
	var done []TaskID
	seen := make(map[TaskID]bool)
	for _, f := range after {
		k := f.Key()
		if f.Passes && !passed[k] && !seen[k] {
			seen[k] = true
			done = append(done, k)
		}
	}
	return done
}
