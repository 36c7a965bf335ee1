package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// attachWriteTimeout bounds one write to an attached viewer: one that
// stops reading for this long is let go (the holder drops frames to it
// meanwhile, and never waits for it).
const attachWriteTimeout = 5 * time.Minute

func (s *Server) screen(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	n, err := intParam(r.URL.Query().Get("scrollback"), "scrollback")
	if err != nil {
		return err
	}
	if n > ipc.MaxTermScrollback {
		return ipc.BadRequest("scrollback: at most %d lines, got %d", ipc.MaxTermScrollback, n)
	}
	scr, err := s.svc.Terminals.SessionScreen(r.Context(), c, r.PathValue("id"), ipc.ScreenOptions{Scrollback: n})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, scr)
}

func (s *Server) send(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.SendRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := (ipc.TermRequest{Op: ipc.TermOpSend, Text: req.Text, Enter: req.Enter}).Check(); err != nil {
		return ipc.BadRequest("%w", err)
	}
	if err := s.svc.Terminals.SendSession(r.Context(), c, r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// attach upgrades the connection to the terminal stream and splices it to
// the session's holder. Everything that can be refused (the caller's
// rights, a session without a terminal, a second writer) is answered as
// an ordinary error before the upgrade.
func (s *Server) attach(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	if !headerHas(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), ipc.TermUpgrade) {
		return ipc.BadRequest("attach upgrades the connection: send Connection: Upgrade and Upgrade: %s", ipc.TermUpgrade)
	}
	readOnly, err := boolParam(r.URL.Query().Get("read_only"), "read_only")
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	holder, st, err := s.svc.Terminals.AttachSession(r.Context(), c, id, ipc.AttachOptions{ReadOnly: readOnly})
	if err != nil {
		return err
	}
	status, err := json.Marshal(st)
	if err != nil {
		holder.Close()
		return err
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		holder.Close()
		return fmt.Errorf("attach: take over the connection: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	_, err = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n%s: %s\r\n\r\n",
		ipc.TermUpgrade, ipc.VersionHeader, s.version, ipc.TermStatusHeader, status)
	if err == nil {
		err = brw.Flush()
	}
	if err != nil {
		conn.Close()
		holder.Close()
		return nil
	}
	s.log.Debug("viewer attached", zap.String("session", id), zap.Int("uid", c.UID), zap.Bool("read_only", readOnly))
	s.streams.splice(conn, brw.Reader, holder)
	s.log.Debug("viewer detached", zap.String("session", id), zap.Int("uid", c.UID))
	return nil
}

// headerHas reports whether a comma-separated header holds token.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// streams are the upgraded connections being spliced, which the HTTP
// server no longer knows of: Close ends them.
type streams struct {
	mu     sync.Mutex
	open   map[net.Conn]io.Closer
	closed bool
}

// splice copies the viewer's connection (and what its reader has
// buffered) to the holder and back until either side ends.
func (ss *streams) splice(conn net.Conn, buffered *bufio.Reader, holder io.ReadWriteCloser) {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		conn.Close()
		holder.Close()
		return
	}
	if ss.open == nil {
		ss.open = map[net.Conn]io.Closer{}
	}
	ss.open[conn] = holder
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.open, conn)
		ss.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(holder, buffered)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(deadlineWriter{conn}, holder)
		done <- struct{}{}
	}()
	<-done
	conn.Close()
	holder.Close()
	<-done
}

// closeAll ends every stream and refuses new ones.
func (ss *streams) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	for c, h := range ss.open {
		c.Close()
		h.Close()
	}
}

// deadlineWriter bounds each write to a viewer.
type deadlineWriter struct{ c net.Conn }

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.c.SetWriteDeadline(time.Now().Add(attachWriteTimeout))
	return d.c.Write(p)
}
