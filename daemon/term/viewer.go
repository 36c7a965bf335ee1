package term

import (
	"encoding/json"
	"net"
	"sync/atomic"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// A viewer's queue is bounded in bytes and in frames. A viewer that stops
// reading fills it and then loses frames, never holding up the child or the
// other viewers; once it has room again it gets a repaint.
const (
	maxViewerQueue    = 256 << 10
	viewerQueueFrames = 256
	// repaintPiece bounds the frames a repaint is cut into.
	repaintPiece = 32 << 10
	// lagRepaintEvery bounds how often a lagging viewer is repainted: a
	// repaint brings the emulator up to date, which costs time that a
	// slow viewer must not take from the child.
	lagRepaintEvery = 250 * time.Millisecond
)

// viewer is one attached connection.
type viewer struct {
	conn     *net.UnixConn
	readOnly bool
	// q holds encoded frames; only the loop sends on it and closes it.
	q      chan []byte
	queued atomic.Int64
	// sent is closed when the sender has stopped.
	sent chan struct{}

	// Owned by the loop.
	lagged      bool
	drops       int
	lastRepaint time.Time
}

func newViewer(c *net.UnixConn, readOnly bool) *viewer {
	return &viewer{conn: c, readOnly: readOnly, q: make(chan []byte, viewerQueueFrames), sent: make(chan struct{})}
}

// offer queues frames for the viewer, all or none, without blocking. Only
// the loop calls it, and the sender only ever makes room, so a check of the
// room holds until the frames are in.
func (v *viewer) offer(frames ...[]byte) bool {
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if v.queued.Load()+int64(total) > maxViewerQueue || len(v.q)+len(frames) > cap(v.q) {
		return false
	}
	v.force(frames...)
	return true
}

// force queues frames whatever their size (the first frames of an attach,
// into an empty queue); the frame count must fit.
func (v *viewer) force(frames ...[]byte) {
	for _, f := range frames {
		v.queued.Add(int64(len(f)))
		v.q <- f
	}
}

func (v *viewer) hasRoomForRepaint() bool {
	return v.queued.Load() < maxViewerQueue/2 && len(v.q) < cap(v.q)/2
}

// send writes the queued frames to the connection until the queue is closed.
// After a failed write it only drains, so that the loop never blocks on it.
func (v *viewer) send() {
	defer close(v.sent)
	for f := range v.q {
		if _, err := v.conn.Write(f); err != nil {
			for range v.q {
			}
			return
		}
		v.queued.Add(-int64(len(f)))
	}
}

// dataFrames cuts terminal output into frames of at most repaintPiece bytes.
func dataFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(len(b), repaintPiece)
		out = append(out, ipc.AppendTermFrame(nil, ipc.TermFrameData, b[:n]))
		b = b[n:]
	}
	return out
}

func jsonFrame(t ipc.TermFrameType, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(ipc.TermError{Code: ipc.TermErrInternal, Message: err.Error()})
		t = ipc.TermFrameError
	}
	return ipc.AppendTermFrame(nil, t, b)
}

// attach registers v, in the loop. The viewer's first frames are the answer
// to its hello and a repaint of the screen.
func (h *holder) attach(v *viewer) *ipc.TermError {
	if h.exit != nil {
		return &ipc.TermError{Code: ipc.TermErrEnded, Message: "the terminal's command has ended"}
	}
	if !v.readOnly && h.writer != nil {
		return &ipc.TermError{Code: ipc.TermErrWriterTaken, Message: ErrWriterTaken.Error()}
	}
	h.viewers[v] = struct{}{}
	if !v.readOnly {
		h.setWriter(v)
	}
	v.force(jsonFrame(ipc.TermFrameOK, h.status()))
	v.force(dataFrames(h.repaint())...)
	return nil
}

// detach lets v go, in the loop.
func (h *holder) detach(v *viewer) {
	if _, ok := h.viewers[v]; !ok {
		return
	}
	delete(h.viewers, v)
	if h.writer == v {
		h.setWriter(nil)
	}
	close(v.q)
	if v.drops > 0 {
		h.diag.Printf("viewer detached after %d dropped frames", v.drops)
	}
}

// status is the holder's TermStatus, in the loop.
func (h *holder) status() ipc.TermStatus {
	return ipc.TermStatus{
		HolderPID:  h.info.HolderPID,
		ChildPID:   h.info.ChildPID,
		ChildStart: h.info.ChildStart,
		StartedAt:  h.info.StartedAt,
		Size:       h.scr.size(),
		Writer:     h.writer != nil,
		Viewers:    len(h.viewers),
	}
}

// resize applies a window size to the terminal and the screen, in the loop.
func (h *holder) resize(size ipc.TermSize) (ipc.TermSize, error) {
	s, err := ipc.CheckTermSize(size.Cols, size.Rows)
	if err != nil {
		return ipc.TermSize{}, err
	}
	if err := setWinsize(h.master, s); err != nil {
		return ipc.TermSize{}, err
	}
	h.screenNow().resize(s)
	return s, nil
}
