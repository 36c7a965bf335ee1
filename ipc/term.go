package ipc

// The terminal stream: the framing spoken between a terminal holder, the
// daemon's proxy and sessionctl. It is a plain byte stream of frames, so the
// daemon can splice a client connection to a holder connection without
// decoding anything: one byte of frame type, four bytes of big-endian
// payload length, then the payload.
//
// A connection to a holder starts with one TermFrameHello carrying a
// TermRequest. The holder answers with TermFrameOK (its JSON payload depends
// on the operation) or TermFrameError. An attach connection then carries
// TermFrameData both ways (output to the viewer, keystrokes from it),
// TermFrameResize and TermFrameDetach from the viewer, and ends with
// TermFrameExited when the session's child ends.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// TermFrameType is the first byte of a terminal stream frame.
type TermFrameType byte

// The frame types of the terminal stream.
const (
	// TermFrameHello opens a connection to a holder; its payload is a JSON
	// TermRequest.
	TermFrameHello TermFrameType = 'h'
	// TermFrameOK answers a TermFrameHello; its JSON payload depends on the operation
	// (TermStatus for status and attach, TermScreen for screen, TermSize for
	// resize, TermExit for wait, {} for send).
	TermFrameOK TermFrameType = 'k'
	// TermFrameData carries raw terminal bytes: output to a viewer, or keystrokes
	// from the writer. An empty one from the writer says its input ended: it
	// watches on, and another viewer may be the writer.
	TermFrameData TermFrameType = 'd'
	// TermFrameResize carries a window size from the writer, as EncodeTermSize
	// writes it.
	TermFrameResize TermFrameType = 'r'
	// TermFrameDetach asks the holder to let the viewer go; its payload is empty.
	TermFrameDetach TermFrameType = 'q'
	// TermFrameError carries a JSON TermError.
	TermFrameError TermFrameType = 'e'
	// TermFrameExited says that the session's child ended; its payload is a JSON
	// TermExit.
	TermFrameExited TermFrameType = 'x'
)

// String names the frame type.
func (t TermFrameType) String() string {
	switch t {
	case TermFrameHello:
		return "hello"
	case TermFrameOK:
		return "ok"
	case TermFrameData:
		return "data"
	case TermFrameResize:
		return "resize"
	case TermFrameDetach:
		return "detach"
	case TermFrameError:
		return "error"
	case TermFrameExited:
		return "exited"
	}
	return fmt.Sprintf("unknown(0x%02x)", byte(t))
}

func (t TermFrameType) known() bool {
	return !strings.HasPrefix(t.String(), "unknown")
}

// TermHeaderSize is the size of a frame header: type and payload length.
const TermHeaderSize = 5

// MaxTermPayload bounds a frame's payload, so that a corrupt or hostile
// length cannot make a reader allocate without limit.
const MaxTermPayload = 1 << 20

// ErrTermFrame is matched by errors.Is for every malformed frame.
var ErrTermFrame = errors.New("malformed terminal frame")

// TermFrame is one decoded frame. Payload may alias the reader's buffer and
// is valid until the next call to Next.
type TermFrame struct {
	Type    TermFrameType
	Payload []byte
}

// AppendTermFrame appends the encoding of one frame to dst.
func AppendTermFrame(dst []byte, t TermFrameType, payload []byte) []byte {
	dst = append(dst, byte(t))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// WriteTermFrame writes one frame with a single Write, so that frames written
// by several goroutines under one lock never interleave.
func WriteTermFrame(w io.Writer, t TermFrameType, payload []byte) error {
	if len(payload) > MaxTermPayload {
		return fmt.Errorf("%w: %s payload of %d bytes is over the limit of %d", ErrTermFrame, t, len(payload), MaxTermPayload)
	}
	_, err := w.Write(AppendTermFrame(make([]byte, 0, TermHeaderSize+len(payload)), t, payload))
	return err
}

// WriteTermJSON writes one frame whose payload is v encoded as JSON.
func WriteTermJSON(w io.Writer, t TermFrameType, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", t, err)
	}
	return WriteTermFrame(w, t, b)
}

// ParseTermHeader checks a frame header and returns its type and payload
// length.
func ParseTermHeader(h []byte) (TermFrameType, int, error) {
	if len(h) < TermHeaderSize {
		return 0, 0, fmt.Errorf("%w: header of %d bytes, want %d", ErrTermFrame, len(h), TermHeaderSize)
	}
	t := TermFrameType(h[0])
	if !t.known() {
		return 0, 0, fmt.Errorf("%w: unknown frame type 0x%02x", ErrTermFrame, h[0])
	}
	n := binary.BigEndian.Uint32(h[1:TermHeaderSize])
	if n > MaxTermPayload {
		return 0, 0, fmt.Errorf("%w: %s payload of %d bytes is over the limit of %d", ErrTermFrame, t, n, MaxTermPayload)
	}
	return t, int(n), nil
}

// TermFrameReader reads frames from a stream through a buffer of its own,
// reusing one payload buffer.
type TermFrameReader struct {
	r   *bufio.Reader
	hdr [TermHeaderSize]byte
	buf []byte
}

// NewTermFrameReader returns a buffered reader of the frames on r.
func NewTermFrameReader(r io.Reader) *TermFrameReader {
	return &TermFrameReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next reads the next frame. At a clean end of the stream (between frames)
// it returns io.EOF; a stream cut inside a frame gives io.ErrUnexpectedEOF.
func (fr *TermFrameReader) Next() (TermFrame, error) {
	f, err := readTermFrame(fr.r, &fr.hdr, &fr.buf)
	// Large one-off payloads (a screen) should not stay pinned.
	if cap(fr.buf) > 64<<10 {
		fr.buf = nil
	}
	return f, err
}

// ReadTermFrame reads exactly one frame from r without reading ahead, so
// that r can be handed on afterwards (to a splice, to an attach loop).
func ReadTermFrame(r io.Reader) (TermFrame, error) {
	var hdr [TermHeaderSize]byte
	var buf []byte
	return readTermFrame(r, &hdr, &buf)
}

func readTermFrame(r io.Reader, hdr *[TermHeaderSize]byte, buf *[]byte) (TermFrame, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return TermFrame{}, err
	}
	t, n, err := ParseTermHeader(hdr[:])
	if err != nil {
		return TermFrame{}, err
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	p := (*buf)[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return TermFrame{}, err
	}
	return TermFrame{Type: t, Payload: p}, nil
}

// DecodeTermJSON decodes a frame's JSON payload into v, rejecting unknown
// fields and trailing data.
func DecodeTermJSON(f TermFrame, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(f.Payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s payload: %v", ErrTermFrame, f.Type, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s payload: data after the JSON value", ErrTermFrame, f.Type)
	}
	return nil
}

// Window size limits. Sizes of 0 are refused; sizes above the maximum are
// clamped, because the holder keeps a cell grid of that size in memory.
const (
	MaxTermCols = 512
	MaxTermRows = 256
)

// ErrTermSize is matched by errors.Is for a refused window size.
var ErrTermSize = errors.New("invalid terminal size")

// TermSize is a terminal window size in cells.
type TermSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// String formats the size as COLSxROWS.
func (s TermSize) String() string { return fmt.Sprintf("%dx%d", s.Cols, s.Rows) }

// CheckTermSize refuses a size with fewer than one column or row and clamps
// one above MaxTermCols or MaxTermRows.
func CheckTermSize(cols, rows int) (TermSize, error) {
	if cols < 1 || rows < 1 {
		return TermSize{}, fmt.Errorf("%w: %dx%d: columns and rows must be at least 1", ErrTermSize, cols, rows)
	}
	return TermSize{Cols: min(cols, MaxTermCols), Rows: min(rows, MaxTermRows)}, nil
}

// EncodeTermSize encodes a size as a TermFrameResize payload: columns then rows,
// big-endian uint16 each. Values beyond 65535 are sent as 65535.
func EncodeTermSize(s TermSize) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, uint16(min(max(s.Cols, 0), 0xffff)))
	binary.BigEndian.PutUint16(b[2:], uint16(min(max(s.Rows, 0), 0xffff)))
	return b
}

// DecodeTermSize decodes a TermFrameResize payload. It does not check the size:
// that is CheckTermSize's job.
func DecodeTermSize(p []byte) (TermSize, error) {
	if len(p) != 4 {
		return TermSize{}, fmt.Errorf("%w: resize payload of %d bytes, want 4", ErrTermFrame, len(p))
	}
	return TermSize{Cols: int(binary.BigEndian.Uint16(p)), Rows: int(binary.BigEndian.Uint16(p[2:]))}, nil
}

// Operations of a TermRequest.
const (
	TermOpAttach = "attach"
	TermOpScreen = "screen"
	TermOpSend   = "send"
	TermOpResize = "resize"
	TermOpStatus = "status"
	TermOpWait   = "wait"
)

// MaxTermSendText bounds the text of one send request.
const MaxTermSendText = 64 << 10

// MaxTermScrollback bounds the scrollback lines one screen request asks for.
const MaxTermScrollback = 100000

// TermRequest is the payload of the TermFrameHello frame that opens a connection.
type TermRequest struct {
	// Op is one of the TermOp constants.
	Op string `json:"op"`
	// ReadOnly makes an attach a viewer that cannot type or resize.
	ReadOnly bool `json:"read_only,omitempty"`
	// Text is what a send types; Enter follows it with a carriage return.
	Text  string `json:"text,omitempty"`
	Enter bool   `json:"enter,omitempty"`
	// Size is the window size of a resize.
	Size TermSize `json:"size,omitzero"`
	// Scrollback is how many lines of scrollback a screen request wants
	// beside the screen (0 for none).
	Scrollback int `json:"scrollback,omitempty"`
}

// Check reports a request that no holder would accept, naming the field.
func (r TermRequest) Check() error {
	switch r.Op {
	case TermOpAttach, TermOpStatus, TermOpWait:
	case TermOpScreen:
		if r.Scrollback < 0 || r.Scrollback > MaxTermScrollback {
			return fmt.Errorf("screen request: scrollback %d is outside 0..%d", r.Scrollback, MaxTermScrollback)
		}
	case TermOpSend:
		if len(r.Text) > MaxTermSendText {
			return fmt.Errorf("send request: text of %d bytes is over the limit of %d", len(r.Text), MaxTermSendText)
		}
		if r.Text == "" && !r.Enter {
			return errors.New("send request: nothing to send (empty text and no enter)")
		}
		if !utf8.ValidString(r.Text) {
			return errors.New("send request: text is not valid UTF-8")
		}
	case TermOpResize:
		if _, err := CheckTermSize(r.Size.Cols, r.Size.Rows); err != nil {
			return fmt.Errorf("resize request: %w", err)
		}
	case "":
		return errors.New("terminal request: op is missing")
	default:
		return fmt.Errorf("terminal request: unknown op %q", r.Op)
	}
	return nil
}

// Codes of a TermError.
const (
	// TermErrWriterTaken: another viewer is attached as the writer.
	TermErrWriterTaken = "writer_taken"
	// TermErrBadRequest: the request or a frame was malformed or refused.
	TermErrBadRequest = "bad_request"
	// TermErrEnded: the session's child has ended.
	TermErrEnded = "ended"
	// TermErrForbidden: the caller is neither the holder's user nor root.
	TermErrForbidden = "forbidden"
	// TermErrInternal: the holder failed to do what was asked.
	TermErrInternal = "internal"
	// TermErrBusy: the terminal's program did not take the input in time.
	TermErrBusy = "busy"
)

// TermError is the payload of a TermFrameError frame.
type TermError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error returns the message.
func (e *TermError) Error() string { return e.Message }

// TermExit is how the session's child ended.
type TermExit struct {
	// PID is the child's process id.
	PID int `json:"pid"`
	// Code is the exit code, or -1 when a signal killed the child.
	Code int `json:"exit_code"`
	// Signal names the signal that killed it (e.g. "SIGTERM"), if any.
	Signal string `json:"signal,omitempty"`
	// ExitedAt is when the holder saw it end.
	ExitedAt time.Time `json:"exited_at"`
}

// String says how the child ended: "exit code 3" or "killed by SIGTERM".
func (e TermExit) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// TermStatus is what a holder says about itself.
type TermStatus struct {
	HolderPID int `json:"holder_pid"`
	ChildPID  int `json:"child_pid"`
	// ChildStart is the child's start time in clock ticks after boot (0
	// where the platform does not tell), which tells it from a later
	// process that reuses its pid.
	ChildStart uint64    `json:"child_start"`
	StartedAt  time.Time `json:"started_at"`
	Size       TermSize  `json:"size"`
	// Writer says whether a viewer is attached as the writer; Viewers
	// counts every attached viewer, the writer included.
	Writer  bool `json:"writer"`
	Viewers int  `json:"viewers"`
}

// TermCursor is the cursor of a TermScreen, 0-based from the top left.
type TermCursor struct {
	X       int  `json:"x"`
	Y       int  `json:"y"`
	Visible bool `json:"visible"`
}

// TermScreen is what the terminal shows: one string per row, trailing
// spaces removed, and optionally the last lines of scrollback.
type TermScreen struct {
	Size       TermSize   `json:"size"`
	Cursor     TermCursor `json:"cursor"`
	AltScreen  bool       `json:"alt_screen"`
	Title      string     `json:"title,omitempty"`
	Lines      []string   `json:"lines"`
	Scrollback []string   `json:"scrollback,omitempty"`
}

// Text returns the screen's rows joined by newlines, without the empty rows
// at the bottom, ending in a newline unless the screen is empty.
func (s TermScreen) Text() string {
	n := len(s.Lines)
	for n > 0 && s.Lines[n-1] == "" {
		n--
	}
	if n == 0 {
		return ""
	}
	return strings.Join(s.Lines[:n], "\n") + "\n"
}
