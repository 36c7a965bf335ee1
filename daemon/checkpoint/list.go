package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Checkpoint is one checkpoint of a project, as listed.
type Checkpoint struct {
	// ID is the checkpoint's commit.
	ID string `json:"id"`
	// SessionID is the session that made it.
	SessionID string `json:"session_id"`
	// Time is when it was made.
	Time time.Time `json:"time"`
	// FilesChanged is the number of paths that differ from its parent.
	FilesChanged int `json:"files_changed"`
	// Message is the caller's message, or the generated subject.
	Message string `json:"message"`
	// Ref is the ref it is on.
	Ref string `json:"ref"`

	tree string
	was  []string // ids it had before a prune rewrote it
}

// entry is one commit read by walk.
type entry struct {
	id, tree string
	parents  []string
	time     time.Time
	author   [3]string // name, email, raw date
	commit   [3]string
	msg      message
}

// walk reads every commit reachable from the checkpoint refs but not from
// the user's branches, tags and remote refs — the checkpoints, and at most
// a few orphaned commits they are based on — with one git log, newest first.
func (r *repo) walk(ctx context.Context) ([]entry, error) {
	res, err := r.run(ctx, nil, nil, "log", "--date-order", "--date=raw",
		"--format=%x1e%H%x1f%T%x1f%P%x1f%ct%x1f%an%x1f%ae%x1f%ad%x1f%cn%x1f%ce%x1f%cd%x1f%B",
		"--glob="+RefPrefix+"*",
		"--not", "--exclude="+RefPrefix+"*", "--branches", "--tags", "--remotes", "--")
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, rec := range strings.Split(string(res.stdout), "\x1e") {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 11)
		if len(f) != 11 {
			return nil, fmt.Errorf("read checkpoints of %s: unexpected git log record %q", r.top, rec)
		}
		secs, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, entry{
			id: f[0], tree: f[1], parents: strings.Fields(f[2]),
			time:   time.Unix(secs, 0).UTC(),
			author: [3]string{f[4], f[5], f[6]},
			commit: [3]string{f[7], f[8], f[9]},
			msg:    parseMessage(f[10]),
		})
	}
	return out, nil
}

func (e entry) checkpoint() (Checkpoint, bool) {
	sid := e.msg.get(trailerSession)
	if sid == "" {
		return Checkpoint{}, false
	}
	msg := e.msg.body
	if msg == "" {
		msg = e.msg.subject
	}
	return Checkpoint{
		ID: e.id, SessionID: sid, Time: e.time,
		FilesChanged: e.msg.getInt(trailerFiles),
		Message:      msg,
		Ref:          RefPrefix + sid,
		tree:         e.tree,
		was:          e.msg.all(trailerWas),
	}, true
}

// List returns every checkpoint of the project in dir, across all sessions'
// refs, newest first. A project that never had one has none (and no shadow
// repository is created for it).
func (c *Checkpointer) List(ctx context.Context, dir string) ([]Checkpoint, error) {
	r, exists, err := resolve(ctx, dir, c.opt.StateDir, c.opt.Timeout, false)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", dir, err)
	}
	if !exists {
		return nil, nil
	}
	cps, err := r.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", r.top, err)
	}
	return cps, nil
}

func (r *repo) list(ctx context.Context) ([]Checkpoint, error) {
	entries, err := r.walk(ctx)
	if err != nil {
		return nil, err
	}
	cps := make([]Checkpoint, 0, len(entries))
	for _, e := range entries {
		if cp, ok := e.checkpoint(); ok {
			cps = append(cps, cp)
		}
	}
	slices.SortStableFunc(cps, func(a, b Checkpoint) int { return b.Time.Compare(a.Time) })
	return cps, nil
}

// find returns the checkpoint whose id (or id before a prune) starts with
// prefix.
func find(cps []Checkpoint, prefix string) (Checkpoint, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if len(p) < 4 || strings.Trim(p, "0123456789abcdef") != "" {
		return Checkpoint{}, fmt.Errorf("checkpoint %q: want at least 4 hex digits of its id: %w", prefix, ErrUnknownCheckpoint)
	}
	var found []Checkpoint
	for _, cp := range cps {
		if strings.HasPrefix(cp.ID, p) {
			found = append(found, cp)
			continue
		}
		for _, w := range cp.was {
			if strings.HasPrefix(w, p) {
				found = append(found, cp)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return Checkpoint{}, fmt.Errorf("checkpoint %q: %w", prefix, ErrUnknownCheckpoint)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, cp := range found {
		ids[i] = cp.ID[:min(12, len(cp.ID))]
	}
	return Checkpoint{}, fmt.Errorf("checkpoint %q matches %s: %w", prefix, strings.Join(ids, ", "), ErrAmbiguousCheckpoint)
}
