package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzLineGuard feeds arbitrary bytes to the guard in front of the SDK: it
// never panics, passes on only JSON-RPC messages (no batch: the SDK would
// end the connection on one), and answers everything else with a JSON-RPC
// error.
func FuzzLineGuard(f *testing.F) {
	f.Add([]byte(initialize + "\n"))
	f.Add([]byte("garbage\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n\n\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"report","arguments":{"summary":1}}}`))
	f.Add([]byte(`{"id":[1],"jsonrpc":"1.0"}` + "\r\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var answers bytes.Buffer
		g := &lineGuard{src: bufio.NewReaderSize(bytes.NewReader(data), 16), w: &answers}
		passed, err := io.ReadAll(g)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(passed)) {
			line = strings.TrimSpace(line)
			if line == "" {
				t.Fatal("an empty line was passed on")
			}
			if line[0] == '[' {
				t.Fatalf("a batch was passed on: %q", line)
			}
			if _, err := jsonrpc.DecodeMessage([]byte(line)); err != nil {
				t.Fatalf("passed on %q: %v", line, err)
			}
		}
		for line := range strings.Lines(answers.String()) {
			var a struct {
				JSONRPC string              `json:"jsonrpc"`
				ID      json.RawMessage     `json:"id"`
				Error   *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil || a.JSONRPC != "2.0" || a.Error == nil || len(a.ID) == 0 {
				t.Fatalf("bad refusal %q: %v", line, err)
			}
		}
	})
}
