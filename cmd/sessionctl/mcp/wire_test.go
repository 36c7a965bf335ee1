package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wire is a server run by Serve on pipes, spoken to line by line.
type wire struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func serveWire(t *testing.T, d Daemon, o Options) *wire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), d, o, inR, outW)
		outW.Close()
		w.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return w
}

func (w *wire) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
}

// recv reads one line, failing after a bound.
func (w *wire) recv(t *testing.T) string {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := w.out.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("recv: %v (got %q)", r.err, r.line)
		}
		return r.line
	case <-time.After(10 * time.Second):
		t.Fatal("recv: no answer in 10s")
	}
	return ""
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// answer is a JSON-RPC response as the tests read it.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (w *wire) answer(t *testing.T) answer {
	t.Helper()
	line := w.recv(t)
	var a answer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

func (w *wire) start(t *testing.T) {
	t.Helper()
	w.send(t, initialize)
	if a := w.answer(t); a.Error != nil || string(a.ID) != "1" {
		t.Fatalf("initialize: %+v", a)
	}
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
}

// TestWireGarbage sends what a broken or hostile client might: each bad
// line gets a JSON-RPC error naming the problem, and the server goes on.
func TestWireGarbage(t *testing.T) {
	w := serveWire(t, newFakeDaemon(), Options{SessionID: testSession})
	for _, tc := range []struct {
		line string
		id   string
		code int
		msg  string
	}{
		{"this is not json", "null", -32700, "not JSON"},
		{`{"jsonrpc":"2.0","id":7,"method":`, "null", -32700, "not JSON"},
		{"\x00\xff\xfe", "null", -32700, "not JSON"},
		{`{"id":8,"method":"tools/list"}`, "8", -32600, "invalid request"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, "null", -32600, "invalid request"},
		{`"just a string"`, "null", -32600, "invalid request"},
		{strings.Repeat("a", maxRequest+10), "null", -32600, "larger than"},
	} {
		w.send(t, tc.line)
		a := w.answer(t)
		if a.Error == nil || string(a.ID) != tc.id || a.Error.Code != tc.code || !strings.Contains(a.Error.Message, tc.msg) {
			t.Errorf("%.40q: answer id %s error %+v, want id %s code %d about %q", tc.line, a.ID, a.Error, tc.id, tc.code, tc.msg)
		}
	}
	w.start(t)
	w.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"time_remaining","arguments":{}}}`)
	if a := w.answer(t); a.Error != nil || string(a.ID) != "2" || !strings.Contains(string(a.Result), "1h30m0s left") {
		t.Errorf("time_remaining after the garbage: %+v %s", a.Error, a.Result)
	}
	w.send(t, `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`)
	if a := w.answer(t); a.Error == nil || a.Error.Code != -32601 {
		t.Errorf("unknown method: %+v", a)
	}
	w.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool"}}`)
	if a := w.answer(t); a.Error == nil || !strings.Contains(a.Error.Message, "no_such_tool") {
		t.Errorf("unknown tool: %+v %s", a.Error, a.Result)
	}
	w.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"report","arguments":"x"}}`)
	if a := w.answer(t); a.Error == nil && !strings.Contains(string(a.Result), `"isError":true`) {
		t.Errorf("arguments not an object: %+v %s", a.Error, a.Result)
	}
	w.in.Close()
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("Serve after the client closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the client closed its end")
	}
}

// TestWireDisconnectMidCall: a client that goes away while a tool call
// waits on the daemon cancels that call, and the server ends cleanly.
func TestWireDisconnectMidCall(t *testing.T) {
	d := newFakeDaemon()
	d.blockCheckpoint = true
	w := serveWire(t, d, Options{SessionID: testSession})
	w.start(t)
	w.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"checkpoint","arguments":{}}}`)
	select {
	case <-d.checkpointStart:
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpoint call did not reach the daemon")
	}
	w.in.Close()
	select {
	case err := <-d.checkpointDone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the daemon call ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon call was not cancelled when the client went away")
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestClientCancelsCall: a client that cancels its call (notifications/
// cancelled) ends the daemon call, and the server serves on.
func TestClientCancelsCall(t *testing.T) {
	d := newFakeDaemon()
	d.blockCheckpoint = true
	cs := connect(t, d, Options{SessionID: testSession})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "checkpoint"})
		errc <- err
	}()
	<-d.checkpointStart
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled call returned no error")
	}
	select {
	case err := <-d.checkpointDone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the daemon call ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon call was not cancelled")
	}
	d.mu.Lock()
	d.blockCheckpoint = false
	d.mu.Unlock()
	if text, isErr := callTool(t, cs, "checkpoint", nil, nil); isErr {
		t.Errorf("after a cancelled call: %s", text)
	}
}

// TestWireAnswersBeforeTheEnd: a client that writes its requests and
// closes its end at once (printf ... | sessionctl mcp) gets their answers;
// a batch among them is refused, and the connection goes on to the end.
func TestWireAnswersBeforeTheEnd(t *testing.T) {
	w := serveWire(t, newFakeDaemon(), Options{SessionID: testSession})
	all := initialize + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n" +
		`[{"jsonrpc":"2.0","id":97,"method":"tools/list"}]` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	if _, err := io.WriteString(w.in, all); err != nil {
		t.Fatal(err)
	}
	w.in.Close()
	got := map[string]answer{}
	for range 3 {
		a := w.answer(t)
		got[string(a.ID)] = a
	}
	if a := got["1"]; a.Error != nil {
		t.Errorf("initialize: %+v", a)
	}
	if a := got["2"]; a.Error != nil || !strings.Contains(string(a.Result), "time_remaining") {
		t.Errorf("tools/list: %+v %s", a.Error, a.Result)
	}
	if a := got["null"]; a.Error == nil || !strings.Contains(a.Error.Message, "batches are not served") {
		t.Errorf("the batch: %+v", a)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the client closed its end")
	}
}
