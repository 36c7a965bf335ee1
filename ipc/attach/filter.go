package attach

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// outputFilter is what stands between a session's output and the
// attaching user's terminal. The session's program draws on that terminal
// (text, colours, cursor movement, the alternate screen, modes), but
// nothing it prints may act on the terminal beyond its screen, or make
// the terminal answer: the answer would come back as keys typed into the
// session (a root admin attached to a user's session would type for it
// whatever the user's program asked for). So it passes text as whole
// UTF-8 characters, and only the ESC and CSI sequences that draw or set a
// mode (csiShown), and drops:
//   - every OSC but a hyperlink (OSC 8) of plain text: the clipboard
//     (OSC 52, written or read), titles, colours, notifications;
//   - DCS, SOS, PM and APC strings, and screen's title (ESC k):
//     requests (DECRQSS, XTGETTCAP), passthrough to an outer terminal,
//     graphics;
//   - every CSI sequence that is not drawing: reports and queries (device
//     status, attributes, modes, the terminal's version, the keyboard
//     protocol's, graphics'), window operations, printing;
//   - DECID (ESC Z);
//   - C1 controls, written as UTF-8 (U+0080 to U+009F) or as one byte,
//     which some terminals obey as ESC sequences, and bytes that are no
//     character.
//
// The session's terminal itself is the holder's, which answers what its
// program asks; the attaching terminal only shows it.
type outputFilter struct {
	state filterState
	seq   []byte // the sequence being read (kept: ESC, CSI; dropped: the rest)
	ch    []byte // a UTF-8 character being read, passed once whole
	want  int    // its length
	// region says the session set a scroll region or origin mode, which a
	// detach resets.
	region bool
}

type filterState uint8

const (
	fGround    filterState = iota
	fEsc                   // after ESC
	fCSI                   // in a CSI sequence
	fString                // in an OSC, DCS, SOS, PM or APC string
	fStringEsc             // an ESC in a string: \ ends it
)

// maxSeq bounds a sequence held whole (a CSI's parameters, an OSC kept);
// a longer one is dropped.
const maxSeq = 4096

// filter appends what of p may reach the terminal to out and returns it.
// A sequence split across calls is held until its end.
func (f *outputFilter) filter(out, p []byte) []byte {
	for _, b := range p {
		switch f.state {
		case fGround:
			if len(f.ch) > 0 {
				if b >= 0x80 && b <= 0xbf {
					f.ch = append(f.ch, b)
					if len(f.ch) == f.want {
						// Whole: passed if it is a character, and not a
						// C1 control (U+0080 to U+009F).
						if r, _ := utf8.DecodeRune(f.ch); r != utf8.RuneError && (r < 0x80 || r > 0x9f) {
							out = append(out, f.ch...)
						}
						f.ch = f.ch[:0]
					}
					continue
				}
				f.ch = f.ch[:0] // a character cut short: dropped, b read anew
			}
			switch {
			case b == 0x1b:
				f.state, f.seq = fEsc, append(f.seq[:0], b)
			case b < 0x80:
				out = append(out, b)
			case b >= 0xc2 && b <= 0xdf:
				f.ch, f.want = append(f.ch[:0], b), 2
			case b >= 0xe0 && b <= 0xef:
				f.ch, f.want = append(f.ch[:0], b), 3
			case b >= 0xf0 && b <= 0xf4:
				f.ch, f.want = append(f.ch[:0], b), 4
			default:
				// A continuation with no character, or a C1 control
				// written as one byte, which some terminals obey: dropped.
			}
		case fEsc:
			f.seq = append(f.seq, b)
			switch {
			case b == '[' && len(f.seq) == 2:
				f.state = fCSI
			case (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_' || b == 'k') && len(f.seq) == 2:
				// OSC, DCS, SOS, PM, APC, and screen's title (ESC k).
				f.state = fString
			case b == 'Z' && len(f.seq) == 2:
				f.state = fGround // DECID: the terminal would answer
			case b == 0x1b:
				// ESC ESC: the first is dropped, the second begins anew.
				f.seq = append(f.seq[:0], b)
			case b == '\\' && len(f.seq) == 2:
				f.state = fGround // a string's end with no string: dropped
			case b >= 0x20 && b <= 0x2f && len(f.seq) < 8:
				// An intermediate (ESC ( 0, a charset): the final follows.
			case b >= 0x30 && b <= 0x7e:
				out = append(out, f.seq...)
				f.state = fGround
			default:
				f.state = fGround // a control in the middle: dropped
			}
		case fCSI:
			f.seq = append(f.seq, b)
			switch {
			case b >= 0x40 && b <= 0x7e:
				if csiShown(f.seq) {
					out = append(out, f.seq...)
					f.region = f.region || setsRegion(f.seq)
				}
				f.state = fGround
			case b == 0x1b:
				f.state, f.seq = fEsc, append(f.seq[:0], b)
			case b < 0x20 || b >= 0x7f || len(f.seq) > maxSeq:
				f.state = fGround // cut, not ASCII, or too long: dropped
			}
		case fString:
			if b == 0x07 && f.seq[1] == ']' {
				f.endString(&out, "\x07")
				continue
			}
			if b == 0x1b {
				f.state = fStringEsc
				continue
			}
			if len(f.seq) <= maxSeq {
				f.seq = append(f.seq, b)
			}
		case fStringEsc:
			if b == '\\' {
				f.endString(&out, "\x1b\\")
				continue
			}
			// Another sequence begins: the string ends, unfinished.
			f.state, f.seq = fEsc, append(f.seq[:0], 0x1b)
			out = f.filter(out, []byte{b})
		}
	}
	return out
}

// endString ends an OSC, DCS, SOS, PM or APC string: only a hyperlink
// (OSC 8) is passed on, with the terminator it came with.
func (f *outputFilter) endString(out *[]byte, st string) {
	s := f.seq
	f.state = fGround
	if len(s) <= maxSeq && len(s) >= 4 && s[1] == ']' && s[2] == '8' && s[3] == ';' && plainText(s[4:]) {
		*out = append(append(*out, s...), st...)
	}
}

// csiShown reports whether a whole CSI sequence (ESC [ ... final) only
// draws or sets a mode: a final byte of those (cursor movement, erasing,
// scrolling, attributes, modes, margins, the cursor's shape), with no
// intermediate but those of DECSCUSR, DECSTR and DECSCA/DECSCL. The
// rest, and the queries among those finals, make the terminal answer or
// act past the screen (window operations, printing, reports).
func csiShown(seq []byte) bool {
	final := seq[len(seq)-1]
	params := seq[2 : len(seq)-1]
	var private byte
	if len(params) > 0 && params[0] >= 0x3c && params[0] <= 0x3f { // < = > ?
		private = params[0]
	}
	for _, c := range params {
		if c >= 0x20 && c <= 0x2f && c != ' ' && c != '!' && c != '"' {
			return false // $ (DECRQM, DECRQPSR...), * (DECRQCRA), # (XTREPORTSGR), '
		}
	}
	if strings.IndexByte(drawingFinals, final) < 0 {
		return false
	}
	switch final {
	case 'm', 'S', 'u':
		return private != '?' // XTQMODKEYS, XTSMGRAPHICS, the keyboard protocol's query
	case 'q':
		return private != '>' // XTVERSION
	}
	return true
}

// drawingFinals are the final bytes of CSI sequences that draw or set a
// mode.
const drawingFinals = "@ABCDEFGHIJKLMPSTXZ`abdefghlmpqrsu"

// plainText reports whether b is UTF-8 text without control characters
// (a hyperlink's parameters and URI).
func plainText(b []byte) bool {
	return utf8.Valid(b) && !bytes.ContainsFunc(b, unicode.IsControl)
}

// setsRegion reports whether a CSI sequence sets a scroll region (DECSTBM,
// DECSLRM) or origin mode (DECOM, private mode 6).
func setsRegion(seq []byte) bool {
	final := seq[len(seq)-1]
	params := string(seq[2 : len(seq)-1])
	switch {
	case (final == 'r' || final == 's') && params != "":
		// CSI r alone is the whole screen again, which needs no reset.
		return !strings.HasPrefix(params, "?")
	case (final == 'h' || final == 'l') && strings.HasPrefix(params, "?"):
		return slices.Contains(strings.Split(params[1:], ";"), "6")
	}
	return false
}
