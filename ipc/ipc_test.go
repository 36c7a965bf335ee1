package ipc

import (
	"encoding/json"
	"errors"
	"io/fs"
	"testing"
)

func TestErrorKeepsItsCause(t *testing.T) {
	err := BadRequest("project directory %s: %w", "/p", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false, want the cause kept", err)
	}
	if !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrNotFound) {
		t.Errorf("%v matches the wrong sentinels", err)
	}
	if got, want := err.Error(), "project directory /p: file does not exist"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestTaskIDRoundTrip(t *testing.T) {
	for _, in := range []string{`[27,"auth-3",null,1.5]`, `[]`} {
		var ids []TaskID
		if err := json.Unmarshal([]byte(in), &ids); err != nil {
			t.Fatalf("unmarshal %s: %v", in, err)
		}
		out, err := json.Marshal(ids)
		if err != nil || string(out) != in {
			t.Errorf("round trip of %s = %s, %v", in, out, err)
		}
	}
	var id TaskID
	if err := json.Unmarshal([]byte(`{"x":1}`), &id); err == nil {
		t.Error("an object as task id: want an error")
	}
}
