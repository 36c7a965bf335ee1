package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// guardedTransport is the SDK's newline-delimited transport behind a guard
// that answers a line which is not a JSON-RPC message (or is larger than
// maxRequest) with a JSON-RPC error, as the protocol asks, and drops it. The
// SDK would end the connection on such a line, and with it the agent's
// tools for the rest of the session.
type guardedTransport struct {
	in     io.ReadCloser
	out    io.WriteCloser
	logger *slog.Logger
}

func (g guardedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	open := &inFlight{}
	open.done = sync.NewCond(&open.mu)
	w := &lockedWriter{w: g.out, open: open}
	r := &lineGuard{src: bufio.NewReaderSize(g.in, 64<<10), w: w, logger: g.logger, open: open}
	return (&sdk.IOTransport{Reader: readCloser{r, g.in}, Writer: w, MaxLineLength: -1}).Connect(ctx)
}

// inFlight counts the requests read and not answered yet: a client that
// closes its end right after its requests (printf ... | sessionctl mcp)
// still gets their answers, as the end of input is passed on to the SDK,
// which ends the connection, only once they are written, or drainWait has
// passed.
type inFlight struct {
	mu   sync.Mutex
	done *sync.Cond
	n    int
}

// drainWait bounds the wait for the answers at the end of input: a
// client's close of its end is also how it ends the connection (MCP's
// stdio shutdown), which cancels a call still waiting on the daemon once
// this has passed.
const drainWait = 2 * time.Second

// message is what the counting reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (o *inFlight) read(line []byte) {
	var m message
	if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && string(m.ID) != "null" && m.Method != "" {
		o.mu.Lock()
		o.n++
		o.mu.Unlock()
	}
}

func (o *inFlight) written(msg []byte) {
	var m message
	if json.Unmarshal(msg, &m) == nil && len(m.ID) > 0 && string(m.ID) != "null" && m.Method == "" {
		o.mu.Lock()
		if o.n > 0 {
			o.n--
		}
		o.done.Broadcast()
		o.mu.Unlock()
	}
}

// drain waits until every request read is answered, or drainWait.
func (o *inFlight) drain() {
	timer := time.AfterFunc(drainWait, func() {
		o.mu.Lock()
		o.n = 0
		o.done.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	o.mu.Lock()
	for o.n > 0 {
		o.done.Wait()
	}
	o.mu.Unlock()
}

// lockedWriter keeps the guard's answers and the SDK's messages whole: the
// SDK writes each message with one Write.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.WriteCloser
	open *inFlight
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.w.Write(p)
	l.mu.Unlock()
	if l.open != nil {
		l.open.written(p)
	}
	return n, err
}

func (l *lockedWriter) Close() error { return l.w.Close() }

type readCloser struct {
	io.Reader
	io.Closer
}

// lineGuard yields only the lines that decode as JSON-RPC messages.
type lineGuard struct {
	src     *bufio.Reader
	w       io.Writer
	logger  *slog.Logger
	pending []byte
	open    *inFlight // nil: no wait for answers at the end
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.line()
		if len(line) > 0 {
			g.pending = line
			if g.open != nil {
				g.open.read(line)
			}
			break
		}
		if err != nil {
			if g.open != nil {
				g.open.drain()
			}
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// line reads the next acceptable line (with its newline), answering and
// dropping the others; it returns nil with the reader's error at the end.
func (g *lineGuard) line() ([]byte, error) {
	for {
		var line []byte
		tooLong := false
		for {
			chunk, err := g.src.ReadSlice('\n')
			if len(line)+len(chunk) > maxRequest {
				tooLong = true
				line = line[:0]
			} else if !tooLong {
				line = append(line, chunk...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				if tooLong || len(bytes.TrimSpace(line)) == 0 {
					return nil, err
				}
				// A last message without its newline is still one.
				line = append(line, '\n')
			}
			break
		}
		if tooLong {
			g.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request larger than %d bytes", maxRequest))
			continue
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] == '[' && json.Valid(trimmed) {
			// A batch: the SDK ends the connection on one of the newer
			// protocol versions, and on a malformed one of the older;
			// no client of sessiond's sends them.
			g.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not served; send one message a line")
			continue
		}
		if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
			if !json.Valid(trimmed) {
				g.refuse(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
			} else {
				g.refuse(requestID(trimmed), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
			}
			continue
		}
		return line, nil
	}
}

// requestID is a refused request's id, if it has a usable one.
func requestID(line []byte) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil || len(v.ID) == 0 {
		return nil
	}
	switch v.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return v.ID
	}
	return nil
}

// refuse writes a JSON-RPC error answer.
func (g *lineGuard) refuse(id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	if g.logger != nil {
		g.logger.Warn("refused a message", "code", code, "error", message)
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	resp.Error.Code, resp.Error.Message = code, message
	data, _ := json.Marshal(resp)
	g.w.Write(append(data, '\n'))
}
