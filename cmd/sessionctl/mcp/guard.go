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
	w := &lockedWriter{w: g.out}
	r := &lineGuard{src: bufio.NewReaderSize(g.in, 64<<10), w: w, logger: g.logger}
	return (&sdk.IOTransport{Reader: readCloser{r, g.in}, Writer: w, MaxLineLength: -1}).Connect(ctx)
}

// lockedWriter keeps the guard's answers and the SDK's messages whole: the
// SDK writes each message with one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.line()
		if len(line) > 0 {
			g.pending = line
			break
		}
		if err != nil {
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
			// A batch (protocol versions before 2025-06-18): the SDK
			// answers it, or refuses it for the newer versions.
			return line, nil
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
