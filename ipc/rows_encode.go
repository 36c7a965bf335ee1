package ipc

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendRows appends the JSON of rows to dst, byte for byte what
// json.Marshal(rows) gives, without reflection: GET /v1/sessions with
// view=row answers every `sessionctl ps`, and encoding/json spent some 4 µs
// a row on it, most of the daemon's answer (bench/README.md, issue 31). A
// value it does not write itself (an agent, a worktree, a string with
// what JSON escapes, a time beyond year 9999) it leaves to encoding/json;
// an error is encoding/json's.
func AppendRows(dst []byte, rows []SessionRow) ([]byte, error) {
	return appendArray(dst, rows, appendRow)
}

// appendArray appends items as a JSON array, as json.Marshal does (nil is
// null), each by appendItem.
func appendArray[T any](b []byte, items []T, appendItem func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if items == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendItem(b, &items[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendRow(b []byte, r *SessionRow) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"command":`...)
	b = appendStrings(b, r.Command)
	b = append(b, `,"state":`...)
	b = appendString(b, r.State)
	b = append(b, `,"end_reason":`...)
	b = appendString(b, r.EndReason)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(r.PID), 10)
	b = append(b, `,"started_at":`...)
	if b, err = appendTime(b, r.StartedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"ended_at":`...)
	if b, err = appendTimePtr(b, r.EndedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"deadline":`...)
	if b, err = appendTime(b, r.Deadline); err != nil {
		return nil, err
	}
	b = append(b, `,"restarts":`...)
	b = strconv.AppendInt(b, int64(r.Restarts), 10)
	b = append(b, `,"last_activity":`...)
	if b, err = appendTimePtr(b, r.LastActivity); err != nil {
		return nil, err
	}
	b = append(b, `,"checkpoints":`...)
	b = strconv.AppendInt(b, int64(r.Checkpoints), 10)
	b = append(b, `,"project_dir":`...)
	b = appendString(b, r.ProjectDir)
	if u := r.Usage; u != nil {
		b = append(b, `,"usage":{"cpu_percent":`...)
		if b, err = appendFloat(b, u.CPUPercent); err != nil {
			return nil, err
		}
		b = append(b, `,"rss_bytes":`...)
		b = strconv.AppendInt(b, u.RSSBytes, 10)
		b = append(b, `,"procs":`...)
		b = strconv.AppendInt(b, int64(u.Procs), 10)
		b = append(b, '}')
	}
	if r.Agent != nil {
		if b, err = appendMarshaled(b, `,"agent":`, r.Agent); err != nil {
			return nil, err
		}
	}
	if r.Tokens != nil {
		if b, err = appendMarshaled(b, `,"tokens":`, r.Tokens); err != nil {
			return nil, err
		}
	}
	if r.TTY {
		b = append(b, `,"tty":true`...)
	}
	if r.Worktree != nil {
		if b, err = appendMarshaled(b, `,"worktree":`, r.Worktree); err != nil {
			return nil, err
		}
	}
	if r.Pool != "" {
		b = append(b, `,"pool":`...)
		b = appendString(b, r.Pool)
	}
	if r.Queue != nil {
		if b, err = appendMarshaled(b, `,"queue":`, r.Queue); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendMarshaled(b []byte, key string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(append(b, key...), data...), nil
}

// appendString appends s as a JSON string: as it is when nothing in it
// needs escaping, else as encoding/json escapes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			data, _ := json.Marshal(s) // a string always encodes
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds), the years it refuses included, through it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		data, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		return append(b, data...), nil
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

func appendTimePtr(b []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return appendTime(b, *t)
}

// appendFloat appends f as encoding/json does: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21 on.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f) // encoding/json's error
		return nil, err
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		data, _ := json.Marshal(f)
		return append(b, data...), nil
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}
