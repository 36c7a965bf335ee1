package ui

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/ipc"
)

// span prints a duration the way sessionctl ps does: 45s, 12m05s, 3h04m, 2d5h.
func span(d time.Duration) string { return ipc.ShortDuration(d) }

// compact prints a duration in at most five cells, for narrow columns:
// 45s, 12m, 3h04m, 27h, 3d.
func compact(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 10*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours())/24)
}

// tokens prints a token count in at most six cells: 812, 14.2k, 1.3M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 100_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	case n < 100_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%dM", n/1_000_000)
}

// line makes text from the daemon safe to show on one line of the screen:
// names, paths and messages come from users (and root sees everyone's).
func line(s string) string { return ipc.TerminalLine(s) }

// outputLine turns a line of a session's output into plain text for the
// screen: escape sequences (colours, cursor moves) are dropped, a carriage
// return keeps what was drawn last, tabs become spaces, and anything else
// that could act on the terminal is written out.
func outputLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	s = ansi.Strip(s)
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ReplaceAll(s, "\t", "    ")
	return ipc.TerminalLine(s)
}

// fit cuts plain or styled text to w cells (with an ellipsis) and pads it
// with spaces to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// fitLeft is fit that keeps the end of the text (for paths).
func fitLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if n := ansi.StringWidth(s); n > w {
		s = ansi.TruncateLeft(s, n-w+1, "…")
	}
	return fit(s, w)
}

// clip cuts text to at most w cells, without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// shellQuote quotes an argument for a shell command line shown to the user.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandLine joins a command's arguments as a shell would read them.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// displayName is the name a session is listed under: its name, else its
// project directory's base name.
func displayName(s *ipc.Session) string {
	if s.Name != "" {
		return line(s.Name)
	}
	if s.ProjectDir != "" {
		return line(filepath.Base(s.ProjectDir))
	}
	return s.ID
}

// stateText is what the STATE column says: the state of a live session,
// the end reason of an ended one.
func stateText(s *ipc.Session) string {
	if s.State == ipc.StateEnded && s.EndReason != "" {
		return s.EndReason
	}
	return s.State
}

// endText says how a session ended: "complete, exit 0", "error, killed by SIGKILL".
func endText(s *ipc.Session) string {
	var parts []string
	if s.EndReason != "" {
		parts = append(parts, s.EndReason)
	}
	switch {
	case s.ExitCode != nil && s.Signal == "":
		parts = append(parts, fmt.Sprintf("exit %d", *s.ExitCode))
	case s.Signal != "":
		parts = append(parts, "killed by "+s.Signal)
	}
	if len(parts) == 0 {
		return s.State
	}
	return strings.Join(parts, ", ")
}

// plural writes "1 file", "3 files".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// shortID is a checkpoint id as sessionctl checkpoints lists it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
