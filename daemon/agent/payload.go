package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxPayload bounds the hook payload a parser reads. Claude Code's
// PostToolUse payload carries the tool's whole output, so it can be large;
// what sessiond needs comes before it.
const MaxPayload = 4 << 20

// readMembers decodes a JSON object's members one at a time and keeps the
// string members named in want. A payload cut short (by the sender's limit
// or a broken pipe) still yields the members before the cut: complete
// reports whether the object was read to its end. err is set only when not
// even the object's start could be read.
//
// At a member named in last, once done() says everything needed is there,
// it stops: a tool's output (PostToolUse's tool_response) can be megabytes,
// and nothing after it matters.
func readMembers(payload []byte, want map[string]*string, last map[string]bool, done func() bool) (complete bool, err error) {
	if len(payload) > MaxPayload {
		payload = payload[:MaxPayload]
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	tok, err := dec.Token()
	if err != nil {
		return false, fmt.Errorf("%w: not JSON: %v", ErrBadPayload, describeJSONError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, fmt.Errorf("%w: not a JSON object", ErrBadPayload)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false, nil
		}
		key, _ := tok.(string)
		if last[key] && done() {
			return true, nil
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false, nil
		}
		if p, ok := want[key]; ok && len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				*p = s
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return false, nil
	}
	return true, nil
}

// describeJSONError words a decoding error for a notice.
func describeJSONError(err error) string {
	if errors.Is(err, io.EOF) {
		return "empty"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated"
	}
	return err.Error()
}
