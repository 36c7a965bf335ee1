package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// queueCmd is `sessionctl queue`.
func (a *app) queueCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "queue",
		Short: "List the queued sessions in the order they will start, and the pools",
		Long: `List the sessions waiting for their turn, in the order they will start:
for a slot of their pool (max_running in the daemon's [pool.NAME]), for the
session they start after (start --after, --after-any), or for their agent's
usage limit to reset; then the pools: their bound, what runs and waits in
them, and until when a pool's quota is limited. A queued session is stopped
(cancelled) with sessionctl stop.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.client.Queue(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(l)
			}
			a.printQueue(l, time.Now())
			return nil
		},
	}
}

func (a *app) printQueue(l *ipc.QueueListing, now time.Time) {
	if len(l.Queued) == 0 {
		fmt.Fprintln(a.out, "no queued sessions")
	} else {
		t := newTable(a.useColor())
		t.header("#", "ID", "NAME", "POOL", "PRIORITY", "QUEUED", "WAITS FOR")
		for _, s := range l.Queued {
			q := s.Queue
			pool := q.Pool
			if pool == "" {
				pool = "-"
			}
			t.row(cell{text: strconv.Itoa(q.Place)}, cell{text: s.ID}, cell{text: ipc.TerminalLine(s.Name)}, cell{text: ipc.TerminalLine(pool)},
				cell{text: strconv.Itoa(q.Priority)}, cell{text: shortDuration(now.Sub(q.Since)) + " ago"}, cell{text: ipc.TerminalLine(waitsFor(q, now))})
		}
		t.write(a.out)
	}
	if len(l.Pools) == 0 {
		return
	}
	fmt.Fprintln(a.out)
	t := newTable(a.useColor())
	t.header("POOL", "RUNNING", "MAX", "QUEUED", "STAGGER", "LIMITED UNTIL")
	for _, p := range l.Pools {
		maxRunning, stagger, limited := "-", "-", "-"
		if p.MaxRunning > 0 {
			maxRunning = strconv.Itoa(p.MaxRunning)
		}
		if p.StaggerMS > 0 {
			stagger = (time.Duration(p.StaggerMS) * time.Millisecond).String()
		}
		color := ""
		if !p.LimitedUntil.IsZero() {
			limited, color = p.LimitedUntil.Local().Format(time.DateTime), "33"
		}
		t.row(cell{text: ipc.TerminalLine(p.Name)}, cell{text: strconv.Itoa(p.Running)}, cell{text: maxRunning}, cell{text: strconv.Itoa(p.Queued)},
			cell{text: stagger}, cell{text: limited, color: color})
	}
	t.write(a.out)
}

// waitsFor says what a queued session waits for.
func waitsFor(q *ipc.QueuePlace, now time.Time) string {
	if q.Why != "" {
		if !q.NotBefore.IsZero() && q.NotBefore.After(now) {
			return q.Why + " (in " + shortDuration(q.NotBefore.Sub(now)) + ")"
		}
		return q.Why
	}
	switch {
	case q.After != "":
		return "after " + q.After
	case !q.NotBefore.IsZero():
		return "until " + q.NotBefore.Local().Format(time.TimeOnly)
	}
	return "a slot"
}

// queuedWords says why a session just started was queued.
func queuedWords(q *ipc.QueuePlace) string {
	if q == nil {
		return "waiting for its turn"
	}
	return waitsFor(q, time.Now())
}
