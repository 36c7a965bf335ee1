package term

import (
	"bytes"
	"io"
)

// Stripper turns terminal output into plain text as it is written through
// it: escape sequences (colours, cursor movement, titles, modes) are
// removed, control characters other than tab and newline are dropped, and
// a carriage return becomes a newline unless one follows, so that a line
// redrawn in place reads as the lines it showed. A cursor movement to
// another line ends the current one, and a move to the right is the spaces
// it skips (full-screen programs, Claude Code's among them, place words
// that way: CSI n C, and CSI n G to a column further on); a move back
// within the line, which would overwrite, is one space. A sequence cut in two
// by a write is completed by the next: the result does not depend on how
// the output was split.
type Stripper struct {
	w        io.Writer
	st       stripState
	n        int  // bytes of the sequence being skipped, to bound it
	cr       bool // a carriage return waits to see what follows
	bol      bool // the text written so far ends a line (or nothing is written)
	col      int  // the column the text written so far ends at
	out      []byte
	csiParam []byte
}

type stripState uint8

const (
	stGround    stripState = iota
	stEsc                  // after ESC
	stEscInter             // ESC and intermediate bytes, before the final
	stCSI                  // ESC [ and parameters
	stString               // OSC, DCS, SOS, PM, APC: until BEL or ST
	stStringEsc            // ESC inside a string: ST if '\' follows
)

// maxSequence bounds the bytes of one escape sequence or control string; a
// longer one is taken to be broken, and what follows is text again.
const maxSequence = 64 << 10

// NewStripper returns a Stripper writing plain text to w.
func NewStripper(w io.Writer) *Stripper { return &Stripper{w: w, bol: true} }

// Write strips p and writes the text it holds. It reports len(p) unless
// the underlying writer fails.
func (s *Stripper) Write(p []byte) (int, error) {
	s.out = s.out[:0]
	for _, b := range p {
		s.step(b)
	}
	if len(s.out) > 0 {
		if _, err := s.w.Write(s.out); err != nil {
			return 0, err
		}
	}
	if cap(s.out) > 64<<10 {
		s.out = nil
	}
	return len(p), nil
}

// Flush writes out a carriage return that was waiting for the next byte.
func (s *Stripper) Flush() error {
	if !s.cr {
		return nil
	}
	s.cr = false
	s.bol = true
	_, err := s.w.Write([]byte{'\n'})
	return err
}

func (s *Stripper) emit(b byte) {
	if s.cr {
		s.cr = false
		if b != '\n' {
			s.out = append(s.out, '\n')
		}
	}
	s.out = append(s.out, b)
	s.bol = b == '\n'
	switch {
	case b == '\n':
		s.col = 0
	case b == '\t':
		s.col = (s.col/8 + 1) * 8
	case b&0xc0 != 0x80: // not a UTF-8 continuation byte
		s.col++
	}
}

// maxSkip bounds the spaces one cursor movement stands for.
const maxSkip = 512

// spaces writes n spaces, at most maxSkip.
func (s *Stripper) spaces(n int) {
	for range min(n, maxSkip) {
		s.emit(' ')
	}
}

// column is the cursor's column after a carriage return still waiting.
func (s *Stripper) column() int {
	if s.cr {
		return 0
	}
	return s.col
}

// param is the first numeric parameter of the CSI sequence, def if none.
func (s *Stripper) param(def int) int {
	n, digits := 0, false
	for _, c := range s.csiParam {
		if c < '0' || c > '9' {
			break
		}
		digits = true
		if n < 1<<20 {
			n = n*10 + int(c-'0')
		}
	}
	if !digits || n == 0 {
		return def
	}
	return n
}

// newline ends the current line, once.
func (s *Stripper) newline() {
	if !s.bol || s.cr {
		s.emit('\n')
	}
}

func (s *Stripper) step(b byte) {
	switch s.st {
	case stGround:
		switch {
		case b == 0x1b:
			s.st, s.n = stEsc, 0
		case b == '\r':
			if s.cr {
				return // a run of returns is one
			}
			s.cr = !s.bol
		case b == '\n' || b == '\t':
			s.emit(b)
		case b < 0x20 || b == 0x7f:
			// Bell, backspace, shifts and the rest: nothing to read.
		default:
			s.emit(b)
		}
	case stEsc:
		switch {
		case b == '[':
			s.st, s.csiParam = stCSI, s.csiParam[:0]
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			s.st = stString
		case b >= 0x20 && b <= 0x2f:
			s.st = stEscInter
		case b == 0x1b:
			// ESC ESC: the first is dropped.
		case b == 'E':
			s.st = stGround
			s.newline() // NEL
		default:
			// A two-byte sequence (ESC 7, ESC =, ...) or a broken one.
			s.st = stGround
			if b < 0x20 {
				s.step(b)
			}
		}
	case stEscInter:
		s.n++
		switch {
		case b >= 0x30 && b <= 0x7e, s.n > maxSequence:
			s.st = stGround
		case b == 0x1b:
			s.st = stEsc
		case b == 0x18 || b == 0x1a:
			s.st = stGround
		}
	case stCSI:
		s.n++
		switch {
		case b >= 0x40 && b <= 0x7e:
			s.st = stGround
			s.csi(b)
		case b == 0x1b:
			s.st, s.n = stEsc, 0
		case b == 0x18 || b == 0x1a, s.n > maxSequence:
			s.st = stGround
		case b >= 0x20 && b <= 0x3f:
			if len(s.csiParam) < 16 {
				s.csiParam = append(s.csiParam, b)
			}
		}
	case stString:
		s.n++
		switch {
		case b == 0x07, b == 0x18, b == 0x1a, s.n > maxSequence:
			s.st = stGround
		case b == 0x1b:
			s.st = stStringEsc
		}
	case stStringEsc:
		s.n++
		if b == '\\' {
			s.st = stGround
			return
		}
		// Not a string terminator: the string was cut short by a new
		// sequence.
		s.st = stEsc
		s.step(b)
	}
}

// csi acts on the cursor movements that change what a reader sees as
// lines and spaces; every other sequence is dropped.
func (s *Stripper) csi(final byte) {
	if bytes.ContainsAny(s.csiParam, "<=>?") {
		return // private modes and the like
	}
	switch final {
	case 'H', 'f', 'd', 'B', 'E', 'F', 'A':
		s.newline()
	case 'C': // forward
		s.spaces(s.param(1))
	case 'G', '`': // to a column of the line
		to, at := s.param(1)-1, s.column()
		switch {
		case to > at:
			s.spaces(to - at)
		case to == 0 && at > 0:
			// Back to the start: the line is redrawn, as after a return.
			s.cr = !s.bol
		case to < at:
			s.emit(' ')
		}
	}
}

// StripString returns the plain text of terminal output held in a string.
func StripString(text string) string {
	var b bytes.Buffer
	st := NewStripper(&b)
	_, _ = st.Write([]byte(text))
	_ = st.Flush()
	return b.String()
}
