package attach

import (
	"slices"
	"strings"
)

// outputFilter is what stands between a session's output and the
// attaching user's terminal. The session's program draws on that terminal
// (text, colours, cursor movement, the alternate screen, modes), but
// nothing it prints may act on the terminal beyond its screen, or make
// the terminal answer: the answer would come back as keys typed into the
// session (a root admin attached to a user's session would type for it
// whatever the user's program asked for). So it drops:
//   - every OSC but hyperlinks (OSC 8): the clipboard (OSC 52, written or
//     read), titles, colours, notifications, the working directory;
//   - DCS, SOS, PM and APC strings: requests (DECRQSS, XTGETTCAP),
//     passthrough to an outer terminal, graphics;
//   - the CSI reports and queries: device status and cursor position (n),
//     device attributes (c), window operations and reports (t), mode
//     requests (DECRQM, $p), the terminal's version (> q), the keyboard
//     protocol's query (? u);
//   - C1 controls written as UTF-8 (U+0080 to U+009F), which some
//     terminals obey as ESC sequences.
//
// The session's terminal itself is the holder's, which answers what its
// program asks; the attaching terminal only shows it.
type outputFilter struct {
	state filterState
	seq   []byte // the sequence being read (kept: ESC, CSI; dropped: the rest)
	c2    bool   // a 0xC2 byte is held: what follows says whether it is a C1
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
			if f.c2 {
				f.c2 = false
				if b >= 0x80 && b <= 0x9f {
					continue // U+0080..U+009F: a C1 control
				}
				if b >= 0xa0 && b <= 0xbf {
					out = append(out, 0xc2, b)
					continue
				}
				// A lone 0xC2 is no character: dropped, so that no
				// later byte makes a C1 of it.
			}
			switch b {
			case 0x1b:
				f.state, f.seq = fEsc, append(f.seq[:0], b)
			case 0xc2:
				f.c2 = true
			default:
				out = append(out, b)
			}
		case fEsc:
			f.seq = append(f.seq, b)
			switch {
			case b == '[' && len(f.seq) == 2:
				f.state = fCSI
			case (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_') && len(f.seq) == 2:
				f.state = fString
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
			case b < 0x20 || len(f.seq) > maxSeq:
				f.state = fGround // cut or too long: dropped
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
	if len(s) <= maxSeq && len(s) >= 4 && s[1] == ']' && s[2] == '8' && s[3] == ';' {
		*out = append(append(*out, s...), st...)
	}
}

// csiShown reports whether a whole CSI sequence (ESC [ ... final) only
// draws: not a query, a report or a window operation.
func csiShown(seq []byte) bool {
	final := seq[len(seq)-1]
	params := seq[2 : len(seq)-1]
	private := len(params) > 0 && params[0] >= 0x3c && params[0] <= 0x3f // < = > ?
	switch final {
	case 'n', 'c', 't':
		return false
	case 'p':
		// DECRQM (CSI ... $ p) asks; DECSTR (CSI ! p) and the rest set.
		return len(params) == 0 || params[len(params)-1] != '$'
	case 'q':
		// XTVERSION (CSI > q) asks; DECSCUSR (CSI N SP q) sets the cursor.
		return !(private && params[0] == '>')
	case 'u':
		// The keyboard protocol's query (CSI ? u); CSI u restores the cursor.
		return !(private && params[0] == '?')
	}
	return true
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
