package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// PruneRequest asks to fold old checkpoints of a project away.
type PruneRequest struct {
	// Dir is the project directory.
	Dir string
	// Keep is how many checkpoints each session ref keeps; 0 means
	// Options.Keep.
	Keep int
	// MaxAge folds checkpoints older than it; 0 means Options.MaxAge,
	// negative: no age limit.
	MaxAge time.Duration
	// Pin names checkpoints (ids or unique prefixes of at least 4 hex
	// digits, current or former) that stay whatever their age or rank: the
	// ones a handoff or the session state cites, for instance.
	Pin []string
	// ShadowRoot and Credential are as in TakeRequest.
	ShadowRoot string
	Credential *Credential
}

// retention says which checkpoints of a ref stay.
type retention struct {
	keep   int
	maxAge time.Duration // <= 0: none
	now    time.Time
	pins   map[string]bool // full ids
}

// keeps reports whether the i-th newest checkpoint e of a ref stays. The
// newest always does: it is what the session's handoff names.
func (rt retention) keeps(i int, e entry) bool {
	if i == 0 || rt.pins[e.id] {
		return true
	}
	if i >= rt.keep {
		return false
	}
	return rt.maxAge <= 0 || rt.now.Sub(e.time) <= rt.maxAge
}

func (c *Checkpointer) retention(keep int, maxAge time.Duration) retention {
	if keep <= 0 {
		keep = c.opt.Keep
	}
	if maxAge == 0 {
		maxAge = c.opt.MaxAge
	}
	return retention{keep: keep, maxAge: maxAge, now: c.now()}
}

// Prune folds away the checkpoints of each session ref of the project that
// retention does not keep (beyond Keep, or older than MaxAge; never a
// ref's newest, never a pinned one) into the next kept one, which then
// records their changes as its own. It returns how many checkpoints were
// folded away. Kept checkpoints after the first folded one get new ids;
// each records its former ids (Checkpoint.FormerIDs), and Lookup and
// Restore accept them, as they accept the ids of folded checkpoints while
// git still has their commits (their reflog entries keep them until git
// expires them).
func (c *Checkpointer) Prune(ctx context.Context, req PruneRequest) (removed int, err error) {
	r, exists, unlock, err := c.open(ctx, where{dir: req.Dir, shadowRoot: req.ShadowRoot, cred: req.Credential}, false)
	if err != nil {
		return 0, fmt.Errorf("prune checkpoints of %s: %w", req.Dir, err)
	}
	defer unlock()
	if !exists {
		return 0, nil
	}
	rt := c.retention(req.Keep, req.MaxAge)
	if len(req.Pin) > 0 {
		cps, err := r.list(ctx)
		if err != nil {
			return 0, fmt.Errorf("prune checkpoints of %s: %w", r.top, err)
		}
		rt.pins = map[string]bool{}
		for _, p := range req.Pin {
			f, err := find(cps, p)
			if err != nil {
				return 0, fmt.Errorf("prune checkpoints of %s: pin: %w", r.top, err)
			}
			rt.pins[f.Checkpoint.ID] = true
		}
	}
	n, err := c.pruneRefs(ctx, r, rt, "")
	if err != nil {
		return n, fmt.Errorf("prune checkpoints of %s: %w", r.top, err)
	}
	return n, nil
}

// retain is Take's automatic retention of the ref it just moved: it folds
// in batches (once the ref holds a quarter more than Keep, or its oldest
// checkpoint is a quarter older than MaxAge), so that ids change rarely;
// and once a day per repository it applies the age limit to every ref, so
// that the refs of old sessions shrink too. Failures are logged: the
// checkpoint itself was made.
func (c *Checkpointer) retain(ctx context.Context, r *repo, sessionID string, res *Result, prev prevCheckpoint) {
	rt := c.retention(0, 0)
	depth := prev.depth + 1
	aged := rt.maxAge > 0 && prev.oldest > 0 && rt.now.Sub(time.Unix(prev.oldest, 0)) > rt.maxAge+rt.maxAge/4
	if depth > rt.keep+max(rt.keep/4, 1) || aged {
		n, err := c.pruneRefs(ctx, r, rt, res.Ref)
		if err != nil {
			c.log.Warn("prune checkpoints", zap.String("session", sessionID), zap.String("dir", r.top), zap.Error(err))
		} else if n > 0 {
			if tip, err := r.tip(ctx, res.Ref); err == nil {
				c.states.retip(stateKey(r, sessionID), res.ID, tip.id, tip.depth, tip.oldest)
				res.ID = tip.id
			}
		}
	}
	if rt.maxAge > 0 && c.aged.due(r.commonDir, rt.now) {
		if _, err := c.pruneRefs(ctx, r, rt, ""); err != nil {
			c.log.Warn("prune old checkpoints", zap.String("dir", r.top), zap.Error(err))
		}
	}
}

// agedPrunes remembers when each repository last had every ref pruned by
// age.
type agedPrunes struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (a *agedPrunes) due(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]time.Time{}
	}
	if t, ok := a.last[key]; ok && now.Sub(t) < 24*time.Hour {
		return false
	}
	if len(a.last) > 4096 {
		clear(a.last)
	}
	a.last[key] = now
	return true
}

// pruneRefs prunes every checkpoint ref, or only ref if it is not "". The
// caller holds the repository lock.
func (c *Checkpointer) pruneRefs(ctx context.Context, r *repo, rt retention, only string) (int, error) {
	pattern := RefPrefix
	if only != "" {
		pattern = only
	}
	res, err := r.run(ctx, nil, nil, "for-each-ref", "--format=%(objectname) %(refname)", pattern)
	if err != nil {
		return 0, err
	}
	tips := parseRefs(res.stdout)
	if len(tips) == 0 {
		return 0, nil
	}
	entries, err := r.walk(ctx)
	if err != nil {
		return 0, err
	}
	byID := make(map[string]entry, len(entries))
	for _, e := range entries {
		byID[e.id] = e
	}
	removed := 0
	for _, t := range tips {
		n, err := r.pruneRef(ctx, t[1], t[0], byID, rt)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

func parseRefs(out []byte) [][2]string {
	var refs [][2]string
	for _, line := range splitLines(out) {
		var id, name string
		if _, err := fmt.Sscanf(line, "%s %s", &id, &name); err == nil {
			refs = append(refs, [2]string{id, name})
		}
	}
	return refs
}

// pruneRef rewrites one session's chain of checkpoints, newest first
// c0 … c(n-1) on base B. The checkpoints retention drops are folded into
// the next kept one (towards c0): with c2 and c3 dropped,
//
//	B ← c4 ← c3 ← c2 ← c1 ← c0     becomes     B ← c4 ← c1' ← c0'
//
// c1' has c1's tree, so it carries c2's and c3's changes; every rewritten
// commit keeps its tree, message, author and dates, and records its former
// id (Sessiond-Was) and the ids of the checkpoints folded into it
// (Sessiond-Folded-Id, with theirs). Kept commits before the first dropped
// one keep their ids. The ref moves by compare-and-swap; the folded commits
// stay in its reflog until git expires the entries. Nothing the ref still
// reaches was dropped.
func (r *repo) pruneRef(ctx context.Context, ref, tip string, byID map[string]entry, rt retention) (int, error) {
	sid := ref[len(RefPrefix):]
	var chain []entry
	for id := tip; id != ""; {
		e, ok := byID[id]
		if !ok || e.msg.get(trailerSession) != sid {
			break
		}
		chain = append(chain, e)
		id = ""
		if len(e.parents) > 0 {
			id = e.parents[0]
		}
	}
	if len(chain) == 0 {
		return 0, nil
	}
	kept := make([]bool, len(chain))
	dropped := 0
	for i, e := range chain {
		if kept[i] = rt.keeps(i, e); !kept[i] {
			dropped++
		}
	}
	if dropped == 0 {
		return 0, nil
	}
	parent := ""
	if p := chain[len(chain)-1].parents; len(p) > 0 {
		parent = p[0]
	}
	var oldest int64
	depth := 0
	rewriting := false
	var folded []string // ids folded since the last kept one
	nfolded := 0
	for i := len(chain) - 1; i >= 0; i-- {
		e := chain[i]
		if !kept[i] {
			folded = append(folded, e.id)
			folded = append(folded, e.msg.all(trailerWas)...)
			folded = append(folded, e.msg.all(trailerFoldedID)...)
			nfolded += 1 + e.msg.getInt(trailerFolded)
			rewriting = true
			continue
		}
		depth++
		if oldest == 0 {
			oldest = e.time.Unix()
		}
		if !rewriting {
			parent = e.id // untouched: everything below it stays
			continue
		}
		m := e.msg
		m.trailers = slices.Clone(m.trailers)
		if len(folded) > 0 {
			files, err := r.changedFiles(ctx, parent, e.tree)
			if err != nil {
				return 0, err
			}
			m.subject = subjectFor("checkpoint", m.get(trailerTurn), files, len(files))
			m.set(trailerFiles, strconv.Itoa(len(files)))
			m.removeAll(trailerFile)
			m.trailers = append(m.trailers, fileTrailers(files)...)
			m.set(trailerFolded, strconv.Itoa(nfolded+m.getInt(trailerFolded)))
			ids := append(m.all(trailerFoldedID), folded...)
			if len(ids) > maxFoldedIDs {
				ids = ids[len(ids)-maxFoldedIDs:] // the oldest are forgotten
			}
			m.removeAll(trailerFoldedID)
			for _, id := range ids {
				m.trailers = append(m.trailers, [2]string{trailerFoldedID, id})
			}
			folded, nfolded = nil, 0
		}
		m.set(trailerDepth, strconv.Itoa(depth))
		m.set(trailerOldest, strconv.FormatInt(oldest, 10))
		m.trailers = append(m.trailers, [2]string{trailerWas, e.id})
		env := []string{
			"GIT_AUTHOR_NAME=" + e.author[0], "GIT_AUTHOR_EMAIL=" + e.author[1], "GIT_AUTHOR_DATE=" + e.author[2],
			"GIT_COMMITTER_NAME=" + e.commit[0], "GIT_COMMITTER_EMAIL=" + e.commit[1], "GIT_COMMITTER_DATE=" + e.commit[2],
		}
		id, err := r.commitTree(ctx, env, e.tree, parent, m.String())
		if err != nil {
			return 0, err
		}
		parent = id
	}
	reason := fmt.Sprintf("prune: fold %d checkpoints of session %s", dropped, sid)
	if err := r.updateRef(ctx, ref, parent, tip, reason); err != nil {
		return 0, err
	}
	return dropped, nil
}

// removeAll drops every trailer with key.
func (m *message) removeAll(key string) {
	m.trailers = slices.DeleteFunc(m.trailers, func(t [2]string) bool { return strings.EqualFold(t[0], key) })
}
