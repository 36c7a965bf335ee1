package ipc

import (
	"io"
	"net/textproto"
	"strings"
	"testing"
)

// readBody reads the whole answer whatever its Content-Length says:
// right, too large, too small, missing or wrong.
func TestReadBodyWhateverTheLengthSays(t *testing.T) {
	const text = `[{"id":"a"},{"id":"b"}]` + "\n"
	for _, length := range []string{"24", "100", "5", "", "x", "-1"} {
		h := textproto.MIMEHeader{}
		if length != "" {
			h.Set("Content-Length", length)
		}
		resp := &Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(text))}
		got, err := readBody(resp)
		if err != nil || string(got) != text {
			t.Errorf("Content-Length %q: read %q, %v; want the whole body", length, got, err)
		}
	}
}
