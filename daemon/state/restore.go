package state

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// StartingNew is what the user sees when a project has no usable session
// state: none yet, cleared, or corrupt.
const StartingNew = "🚀 Starting new session..."

// RestoreSummary renders the "Restoring session..." text that sessionctl
// start and sessionctl state print, as DESIGN §5.5 shows it, with times
// relative to now. Every text from the state is one line with its control
// characters escaped (see TerminalLine): it goes to a terminal. It ends with a newline. A nil state gives StartingNew.
func RestoreSummary(s *SessionState, now time.Time) string {
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
		b.WriteString("\n")
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
	pct := s.ProgressPct
	if math.IsNaN(pct) || math.IsInf(pct, 0) {
		pct = 0
	}
	// Floor, as the seed shows 68.5 as "68%": never claim more than was done.
	fmt.Fprintf(&b, "Progress: %d%%", int(math.Floor(math.Max(0, math.Min(pct, 100)))))
	if s.TasksTotal > 0 {
		fmt.Fprintf(&b, " (%d/%d tasks complete)", s.TasksDone, s.TasksTotal)
	}
	b.WriteString("\n")
	if len(s.ActiveBlockers) == 0 {
		b.WriteString("Blockers: None\n")
	} else {
		b.WriteString("Blockers:\n")
		for _, bl := range s.ActiveBlockers {
			if bl.Priority != "" {
				fmt.Fprintf(&b, "  - [%s] %s\n", termLine(bl.Priority), termLine(bl.Question))
			} else {
				fmt.Fprintf(&b, "  - %s\n", termLine(bl.Question))
			}
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
