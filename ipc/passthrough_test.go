package ipc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc/format"
)

// fillAll sets every field reachable from v to a value that is not zero,
// so that a test over it sees every field encoded.
func fillAll(v reflect.Value, depth int) {
	if v.Kind() != reflect.Pointer {
		if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
			// A type of its own text (a signal, a duration, a size, a
			// port range): the first text of these that it takes.
			for _, text := range []string{"SIGTERM", "5m30s", "1MiB", "8000-8100", "x"} {
				if u.UnmarshalText([]byte(text)) == nil {
					return
				}
			}
		}
		if _, ok := v.Addr().Interface().(json.Unmarshaler); ok {
			// A type that checks what it decodes: filled if that passes.
			tmp := reflect.New(v.Type()).Elem()
			fill(tmp, depth)
			if b, err := json.Marshal(tmp.Interface()); err == nil && json.Unmarshal(b, v.Addr().Interface()) == nil {
				return
			}
			v.Set(reflect.Zero(v.Type()))
			return
		}
	}
	fill(v, depth)
}

func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(TaskID{}) {
			v.Set(reflect.ValueOf(format.IntTaskID(7)))
			return
		}
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 16, 5, 7, 123456789, time.FixedZone("X", 3600))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), depth)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage{}) {
			v.SetBytes([]byte(`{"k":[1,"<&>"]}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fillAll(s.Index(0), depth)
		fillAll(s.Index(1), depth)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth)
		fillAll(e, depth)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("a <b> & \"c\" é\u2028")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-42)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(42)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.1 + 1e-9)
	}
}

// TestSessionListPassesThrough: `ps --json` prints the daemon's answer
// indented rather than decoded and encoded again; that is the same text
// for every field of a session, as long as encoding a decoded session
// gives back what was decoded.
func TestSessionListPassesThrough(t *testing.T) {
	var full Session
	fillAll(reflect.ValueOf(&full).Elem(), 0)
	list := []Session{full, {ID: "e"}}
	sent, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var passed bytes.Buffer
	if err := json.Indent(&passed, sent, "", "  "); err != nil {
		t.Fatal(err)
	}
	var decoded []Session
	if err := json.Unmarshal(sent, &decoded); err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(decoded, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(passed.Bytes(), again) {
		t.Errorf("indented as sent:\n%s\ndecoded and encoded:\n%s", passed.Bytes(), again)
	}
}
