package term

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// maxConns bounds the connections a holder serves at once.
const maxConns = 64

// sendTimeout bounds a send: text the terminal's program has not taken
// by then is not typed (the caller is told how much was).
const sendTimeout = 5 * time.Second

// replyTimeout bounds the writing of one answer.
const replyTimeout = 10 * time.Second

// accept serves the socket until the holder closes it. Only the holder's own
// user (the daemon's) and root get in.
func (h *holder) accept() {
	slots := make(chan struct{}, maxConns)
	self := os.Geteuid()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of fds or the like: let it pass rather than spin.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		uid, err := peerUID(c)
		if err != nil || (uid != self && uid != 0) {
			h.diag.Printf("refused a connection from uid %d (%v)", uid, err)
			refuse(c, ipc.TermErrForbidden, "only the daemon's user and root may use this terminal")
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			refuse(c, ipc.TermErrInternal, "too many connections to this terminal")
			continue
		}
		go func() {
			defer func() { <-slots }()
			h.serveConn(c)
		}()
	}
}

func refuse(c *net.UnixConn, code, msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_ = ipc.WriteTermJSON(c, ipc.TermFrameError, ipc.TermError{Code: code, Message: msg})
	c.Close()
}

func reply(c *net.UnixConn, t ipc.TermFrameType, v any) {
	_ = c.SetWriteDeadline(time.Now().Add(replyTimeout))
	_, _ = c.Write(jsonFrame(t, v))
	_ = c.SetWriteDeadline(time.Time{})
}

func ended() ipc.TermError {
	return ipc.TermError{Code: ipc.TermErrEnded, Message: "the terminal's command has ended"}
}

// serveConn answers one connection: its hello says what it wants.
func (h *holder) serveConn(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	fr := ipc.NewTermFrameReader(c)
	f, err := fr.Next()
	if err != nil {
		return
	}
	var req ipc.TermRequest
	if f.Type != ipc.TermFrameHello {
		reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrBadRequest, Message: "the first frame must be a hello, not " + f.Type.String()})
		return
	}
	err = ipc.DecodeTermJSON(f, &req)
	if err == nil {
		err = req.Check()
	}
	if err != nil {
		reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrBadRequest, Message: err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Time{})

	switch req.Op {
	case ipc.TermOpStatus:
		var st ipc.TermStatus
		if !h.call(func() { st = h.status() }) {
			reply(c, ipc.TermFrameError, ended())
			return
		}
		reply(c, ipc.TermFrameOK, st)
	case ipc.TermOpScreen:
		var scr ipc.TermScreen
		if !h.call(func() { scr = h.screenNow().snapshot(req.Scrollback) }) {
			reply(c, ipc.TermFrameError, ended())
			return
		}
		reply(c, ipc.TermFrameOK, scr)
	case ipc.TermOpResize:
		var size ipc.TermSize
		var rerr error
		if !h.call(func() { size, rerr = h.resize(req.Size) }) {
			reply(c, ipc.TermFrameError, ended())
			return
		}
		if rerr != nil {
			reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrBadRequest, Message: rerr.Error()})
			return
		}
		reply(c, ipc.TermFrameOK, size)
	case ipc.TermOpSend:
		var over bool
		if !h.call(func() { over = h.exit != nil }) || over {
			reply(c, ipc.TermFrameError, ended())
			return
		}
		data := []byte(req.Text)
		if req.Enter {
			data = append(data, '\r')
		}
		if n, err := h.typeWithin(data, time.Now().Add(sendTimeout)); err != nil {
			switch {
			case errors.Is(err, errFinished):
				reply(c, ipc.TermFrameError, ended())
			case errors.Is(err, errNotReading):
				reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrBusy, Message: fmt.Sprintf(
					"%s: %d of %d bytes typed in %s, the rest dropped", err, n, len(data), sendTimeout)})
			default:
				reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrInternal, Message: "type into the terminal: " + err.Error()})
			}
			return
		}
		reply(c, ipc.TermFrameOK, struct{}{})
	case ipc.TermOpWait:
		h.serveWait(c, fr)
	case ipc.TermOpAttach:
		h.serveAttach(c, fr, req.ReadOnly)
	}
}

// serveWait answers once the child's exit is recorded, or lets go when the
// client does.
func (h *holder) serveWait(c *net.UnixConn, fr *ipc.TermFrameReader) {
	ch := make(chan ipc.TermExit, 1)
	if !h.call(func() { h.waiters = append(h.waiters, ch) }) {
		ex, err := ReadExit(h.spec.SessionDir)
		if err != nil {
			reply(c, ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrInternal, Message: err.Error()})
			return
		}
		reply(c, ipc.TermFrameOK, ex)
		return
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			if _, err := fr.Next(); err != nil {
				return
			}
		}
	}()
	select {
	case ex := <-ch:
		reply(c, ipc.TermFrameOK, ex)
	case <-gone:
	}
}

// serveAttach streams the terminal to a viewer and, from the writer, takes
// keystrokes and window sizes until it detaches or goes away.
func (h *holder) serveAttach(c *net.UnixConn, fr *ipc.TermFrameReader, readOnly bool) {
	v := newViewer(c, readOnly)
	var refused *ipc.TermError
	if !h.call(func() { refused = h.attach(v) }) {
		reply(c, ipc.TermFrameError, ended())
		return
	}
	if refused != nil {
		reply(c, ipc.TermFrameError, refused)
		return
	}
	go v.send()
	defer func() {
		h.call(func() { h.detach(v) })
		// Let the sender finish what is queued (an error frame, say)
		// before the connection closes under it.
		select {
		case <-v.sent:
		case <-time.After(time.Second):
		}
	}()
	notice := func(msg string) {
		h.call(func() {
			v.offer(jsonFrame(ipc.TermFrameError, ipc.TermError{Code: ipc.TermErrBadRequest, Message: msg}))
		})
	}
	for {
		f, err := fr.Next()
		if err != nil {
			return
		}
		switch f.Type {
		case ipc.TermFrameData:
			if readOnly {
				continue // a read-only viewer's keys go nowhere
			}
			if len(f.Payload) == 0 {
				// The writer's input ended (attach < file): it watches on,
				// and the writer's place is free for someone who types.
				h.call(func() {
					if h.writer == v {
						h.setWriter(nil)
					}
				})
				readOnly = true
				continue
			}
			if err := h.typeInput(f.Payload); err != nil {
				return
			}
		case ipc.TermFrameResize:
			if readOnly {
				continue
			}
			size, err := ipc.DecodeTermSize(f.Payload)
			if err != nil {
				notice(err.Error())
				return
			}
			var rerr error
			h.call(func() { _, rerr = h.resize(size) })
			if rerr != nil {
				// A bad size is refused, the stream goes on.
				notice(rerr.Error())
			}
		case ipc.TermFrameDetach:
			return
		default:
			notice("a viewer may send data, resize and detach frames, not " + f.Type.String())
			return
		}
	}
}
