package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/ipc/format"
)

// Checkpoint is one checkpoint of a project, as listed: the listing
// (format.Checkpoint), with its tree and the ids folded into it.
type Checkpoint struct {
	format.Checkpoint

	tree   string
	folded []string // ids of the checkpoints folded into it (and their former ids)
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

// walkFormat is the git log format walk reads.
const walkFormat = "%x1e%H%x1f%T%x1f%P%x1f%ct%x1f%an%x1f%ae%x1f%ad%x1f%cn%x1f%ce%x1f%cd%x1f%B"

// walk reads every commit reachable from the checkpoint refs but not from
// the user's branches, tags and remote refs — the checkpoints, and at most
// a few orphaned commits they are based on — with one git log, newest first.
func (r *repo) walk(ctx context.Context) ([]entry, error) {
	res, err := r.run(ctx, nil, nil, "log", "--date-order", "--date=raw", "--format="+walkFormat,
		"--glob="+RefPrefix+"*",
		"--not", "--exclude="+RefPrefix+"*", "--branches", "--tags", "--remotes", "--")
	if err != nil {
		return nil, err
	}
	return parseWalk(r, res.stdout)
}

// parseWalk reads git log output in walkFormat.
func parseWalk(r *repo, out []byte) ([]entry, error) {
	var es []entry
	for _, rec := range strings.Split(string(out), "\x1e") {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 11)
		if len(f) != 11 {
			return nil, fmt.Errorf("read checkpoints of %s: unexpected git log record %q", r.top, rec)
		}
		secs, _ := strconv.ParseInt(f[3], 10, 64)
		es = append(es, entry{
			id: f[0], tree: f[1], parents: strings.Fields(f[2]),
			time:   time.Unix(secs, 0).UTC(),
			author: [3]string{f[4], f[5], f[6]},
			commit: [3]string{f[7], f[8], f[9]},
			msg:    parseMessage(f[10]),
		})
	}
	return es, nil
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
		Checkpoint: format.Checkpoint{
			ID: e.id, SessionID: sid, Time: e.time,
			FilesChanged: e.msg.getInt(trailerFiles),
			Message:      msg,
			Ref:          RefPrefix + sid,
			Summary:      e.msg.subject,
			Turn:         e.msg.get(trailerTurn),
			Files:        e.msg.all(trailerFile),
			FormerIDs:    e.msg.all(trailerWas),
			Folded:       e.msg.getInt(trailerFolded),
		},
		tree:   e.tree,
		folded: e.msg.all(trailerFoldedID),
	}, true
}

// ListRequest names the project whose checkpoints List returns.
type ListRequest struct {
	Dir string
	// ShadowRoot and Credential are as in TakeRequest.
	ShadowRoot string
	Credential *Credential
}

// List returns every checkpoint of the project, across all sessions' refs,
// newest first, each with the ids it had before prunes rewrote it. A
// project that never had one has none (and no shadow repository is created
// for it).
func (c *Checkpointer) List(ctx context.Context, req ListRequest) ([]Checkpoint, error) {
	r, exists, err := c.resolve(ctx, where{dir: req.Dir, shadowRoot: req.ShadowRoot, cred: req.Credential}, false)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", req.Dir, err)
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

// Match says how an id found a checkpoint.
type Match string

const (
	// MatchCurrent: the id is the checkpoint's own.
	MatchCurrent Match = "current"
	// MatchFormer: the checkpoint had the id before a prune rewrote it (same
	// tree, same message).
	MatchFormer Match = "former"
	// MatchFolded: the id was a checkpoint that retention folded into this
	// one; its changes are this one's now, and its own state is gone from
	// the list (Restore still restores it while git has its commit).
	MatchFolded Match = "folded"
)

// Found is the checkpoint an id led to.
type Found struct {
	// Checkpoint is the current checkpoint the id leads to.
	Checkpoint Checkpoint `json:"checkpoint"`
	// Match says how.
	Match Match `json:"match"`
	// ID is the full id the query matched (the checkpoint's, a former or a
	// folded one).
	ID string `json:"id"`
}

// LookupRequest asks which checkpoint an id names.
type LookupRequest struct {
	Dir string
	// ID is a checkpoint id or a unique prefix of one (at least 4 hex
	// digits): current, former (before a prune rewrote it) or folded.
	ID string
	// ShadowRoot and Credential are as in TakeRequest.
	ShadowRoot string
	Credential *Credential
}

// Lookup finds the checkpoint that any id ever handed out for one names
// now: its own, one it had before a prune rewrote it, or one that was
// folded into it. It fails with ErrUnknownCheckpoint or
// ErrAmbiguousCheckpoint.
func (c *Checkpointer) Lookup(ctx context.Context, req LookupRequest) (Found, error) {
	cps, err := c.List(ctx, ListRequest{Dir: req.Dir, ShadowRoot: req.ShadowRoot, Credential: req.Credential})
	if err != nil {
		return Found{}, err
	}
	f, err := find(cps, req.ID)
	if err != nil {
		return Found{}, fmt.Errorf("look up in %s: %w", req.Dir, err)
	}
	return f, nil
}

// find returns the checkpoint that prefix names: its id, a former id, or
// the id of a checkpoint folded into it, in that order of preference (a
// prefix that is some checkpoint's own id is not ambiguous because it is
// also another's folded one).
func find(cps []Checkpoint, prefix string) (Found, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if len(p) < 4 || strings.Trim(p, "0123456789abcdef") != "" {
		return Found{}, fmt.Errorf("checkpoint %q: want at least 4 hex digits of its id: %w", prefix, ErrUnknownCheckpoint)
	}
	for _, m := range []Match{MatchCurrent, MatchFormer, MatchFolded} {
		var found []Found
		for _, cp := range cps {
			var ids []string
			switch m {
			case MatchCurrent:
				ids = []string{cp.ID}
			case MatchFormer:
				ids = cp.FormerIDs
			case MatchFolded:
				ids = cp.folded
			}
			for _, id := range ids {
				if strings.HasPrefix(id, p) {
					found = append(found, Found{Checkpoint: cp, Match: m, ID: id})
					break
				}
			}
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		ids := make([]string, len(found))
		for i, f := range found {
			ids[i] = f.ID[:min(12, len(f.ID))]
		}
		return Found{}, fmt.Errorf("checkpoint %q matches %s: %w", prefix, strings.Join(ids, ", "), ErrAmbiguousCheckpoint)
	}
	return Found{}, fmt.Errorf("checkpoint %q: %w", prefix, ErrUnknownCheckpoint)
}
