package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// TaskID identifies a task or feature. Feature lists use numbers (27) or
// strings ("auth-3") as ids; a TaskID keeps which one it was, so that it
// marshals back exactly as it came. The zero TaskID (also StringTaskID(""))
// means "no id" and marshals as null.
type TaskID struct {
	text   string
	number bool
}

// IntTaskID returns the numeric TaskID n.
func IntTaskID(n int64) TaskID { return TaskID{text: strconv.FormatInt(n, 10), number: true} }

// StringTaskID returns the string TaskID s.
func StringTaskID(s string) TaskID { return TaskID{text: s} }

// String returns the id as text: the number's digits or the string itself.
func (t TaskID) String() string { return t.text }

// IsNumber reports whether the id was a JSON number.
func (t TaskID) IsNumber() bool { return t.number }

// IsZero reports whether t is the zero TaskID (no id).
func (t TaskID) IsZero() bool { return t == TaskID{} }

// Int returns the id as an integer if it is an integral number.
func (t TaskID) Int() (int64, bool) {
	if !t.number {
		return 0, false
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	return n, err == nil
}

// MarshalJSON writes a numeric id as a number, the zero TaskID as null and
// any other as a string.
func (t TaskID) MarshalJSON() ([]byte, error) {
	switch {
	case t.IsZero():
		return []byte("null"), nil
	case t.number:
		return []byte(t.text), nil
	}
	return json.Marshal(t.text)
}

// UnmarshalJSON accepts a number, a string or null (the zero TaskID).
func (t *TaskID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*t = TaskID{}
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*t = TaskID{text: s}
		return nil
	case len(data) > 0 && (data[0] == '-' || data[0] >= '0' && data[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return err
		}
		*t = TaskID{text: string(n), number: true}
		return nil
	}
	return fmt.Errorf("task id must be a number or a string, got %.40s", data)
}

// WithText returns t with its text replaced, its kind kept: a string id
// stays a string (its text bounded, say), a number a number.
func (t TaskID) WithText(text string) TaskID { return TaskID{text: text, number: t.number} }
