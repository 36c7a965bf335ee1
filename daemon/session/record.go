package session

import (
	"encoding/json"
	"time"

	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// cloneRecord returns a copy of r that shares nothing mutable with it, so
// that a published snapshot never changes under its readers. Records are
// handled by pointer: one by value takes some 700 bytes of the caller's
// stack at each call, and a session's goroutine, whose stack the collector
// has shrunk while it waited, grew it again at every write of its record.
func cloneRecord(r *ipc.Session) *ipc.Session {
	c := new(ipc.Session)
	*c = *r
	c.Command = append([]string(nil), r.Command...)
	c.FilesChanged = append([]string{}, r.FilesChanged...)
	c.Warnings = append([]string(nil), r.Warnings...)
	c.EnvKeys = append([]string(nil), r.EnvKeys...)
	c.Blockers = append([]ipc.Blocker(nil), r.Blockers...)
	if r.PassingAtStart != nil {
		c.PassingAtStart = append([]ipc.TaskID{}, r.PassingAtStart...)
	}
	c.ResolvedBlockers = append([]ipc.Blocker(nil), r.ResolvedBlockers...)
	c.EndedAt = clonePtr(r.EndedAt)
	c.ExitCode = clonePtr(r.ExitCode)
	c.LastActivity = clonePtr(r.LastActivity)
	if r.Warning != nil {
		w := *r.Warning
		w.Signaled = append([]int(nil), w.Signaled...)
		w.Skipped = append([]ipc.SkippedProc(nil), w.Skipped...)
		c.Warning = &w
	}
	if r.Agent != nil {
		a := *r.Agent
		a.StateSince = clonePtr(a.StateSince)
		a.Notices = append([]string(nil), a.Notices...)
		c.Agent = &a
	}
	c.Tokens = clonePtr(r.Tokens)
	// The cgroup's account changes at the end (its V1 map never does).
	c.Cgroup = clonePtr(r.Cgroup)
	c.Memory = clonePtr(r.Memory)
	c.Worktree = clonePtr(r.Worktree)
	if r.Report != nil {
		rep := *r.Report
		rep.Next = append([]string(nil), rep.Next...)
		rep.Blockers = append([]string(nil), rep.Blockers...)
		rep.Resolve = append([]string(nil), rep.Resolve...)
		rep.Progress = clonePtr(rep.Progress)
		c.Report = &rep
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// latest returns the later of t and the time ns (Unix nanoseconds).
func latest(t *time.Time, ns int64) *time.Time {
	lo := time.Unix(0, ns)
	if t == nil || lo.After(*t) {
		return &lo
	}
	return t
}

// applyStats fills a record's watcher fields from the project's watch.
func applyStats(rec *ipc.Session, st watch.Stats) {
	rec.FilesChanged = st.FilesChanged
	if rec.FilesChanged == nil {
		rec.FilesChanged = []string{}
	}
	rec.FilesChangedMore = st.FilesChangedMore
	if st.LastFileEdited != "" {
		rec.LastFileEdited = st.LastFileEdited
	}
	if !st.LastActivity.IsZero() && (rec.LastActivity == nil || st.LastActivity.After(*rec.LastActivity)) {
		t := st.LastActivity
		rec.LastActivity = &t
	}
}

// appendBounded appends v to list unless it is there already or the list
// holds max items; it never writes into list's backing array.
func appendBounded(list []string, v string, max int) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	if len(list) >= max {
		return list
	}
	return append(list[:len(list):len(list)], v)
}

// maxRecordWarnings bounds the warnings a record collects.
const maxRecordWarnings = 20

func (s *Session) warnRecord(msg string) {
	s.rec.Warnings = appendBounded(s.rec.Warnings, msg, maxRecordWarnings)
}

func eventData(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
