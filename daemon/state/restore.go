package state

import (
	"fmt"
	"strings"
	"time"
)

// StartingNew is what the user sees when a project has no usable session
// state: none yet, cleared, or corrupt.
const StartingNew = "🚀 Starting new session..."

// RestoreSummary renders the "Restoring session..." text that sessionctl
// start and sessionctl state print, as DESIGN §5.5 shows it, with times
// relative to now, and notes (what changed since the state was written)
// after the last session. Every text from the state is one line with its
// control characters escaped (see TerminalLine): it goes to a terminal. It
// ends with a newline. A nil state gives StartingNew.
func RestoreSummary(s *SessionState, now time.Time, notes ...string) string {
	if s == nil {
		return StartingNew + "\n"
	}
	var b strings.Builder
	b.WriteString("📋 Restoring session...\n\n")
	if l := s.LastSession; l != nil {
		b.WriteString("Last Session:\n")
		if l.Summary != "" {
			fmt.Fprintf(&b, "  Summary: %s\n", termLine(l.Summary))
		}
		if !l.Timestamp.IsZero() {
			fmt.Fprintf(&b, "  Time: %s\n", RelativeTime(l.Timestamp, now))
		}
		if l.EndReason != "" && l.EndReason != "complete" {
			fmt.Fprintf(&b, "  Ended: %s\n", termLine(l.EndReason))
		}
		if s.SessionsSince > 0 {
			fmt.Fprintf(&b, "  Since then: %s that did nothing (%s)\n", plural(s.SessionsSince, "session"), termLine(runEnds(s.RecentRuns)))
		}
		b.WriteString("\n")
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "Note: %s\n\n", termLine(n))
	}
	if len(s.NextActions) == 0 {
		b.WriteString("Next Actions: None\n\n")
	} else {
		b.WriteString("Next Actions:\n")
		for i, a := range s.NextActions {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, termLine(a))
		}
		b.WriteString("\n")
	}
	b.WriteString(progressLine(s) + "\n")
	if len(s.ActiveBlockers) == 0 {
		b.WriteString("Blockers: None\n")
	} else {
		b.WriteString("Blockers:\n")
		for _, bl := range s.ActiveBlockers {
			fmt.Fprintf(&b, "  - #%d ", bl.ID)
			if bl.Priority != "" {
				fmt.Fprintf(&b, "[%s] ", termLine(bl.Priority))
			}
			b.WriteString(termLine(bl.Question) + "\n")
		}
	}
	return b.String()
}

// RelativeTime says how long before now t was, in the words of the restore
// summary: "just now", "5 minutes ago", "1 hour ago", "3 hours ago",
// "yesterday", "4 days ago". A time after now (clock skew) is "just now".
func RelativeTime(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 48*time.Hour:
		return "yesterday"
	default:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
