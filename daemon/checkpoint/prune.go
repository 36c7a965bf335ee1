package checkpoint

import (
	"context"
	"fmt"
	"strconv"
)

// Prune keeps the newest keep checkpoints of each session ref of the project
// in dir (Options.Keep when keep <= 0) and folds the older ones into the
// oldest kept one, which then records their changes as its own. It returns
// how many checkpoints were folded away. Kept checkpoints get new ids;
// Restore still finds them by their old ones.
func (c *Checkpointer) Prune(ctx context.Context, dir string, keep int) (removed int, err error) {
	if keep <= 0 {
		keep = c.opt.Keep
	}
	r, exists, unlock, err := c.open(ctx, dir, false)
	if err != nil {
		return 0, fmt.Errorf("prune checkpoints of %s: %w", dir, err)
	}
	defer unlock()
	if !exists {
		return 0, nil
	}
	n, err := c.pruneRefs(ctx, r, keep, "")
	if err != nil {
		return n, fmt.Errorf("prune checkpoints of %s: %w", r.top, err)
	}
	return n, nil
}

// pruneRefs prunes every checkpoint ref, or only ref if it is not "". The
// caller holds the repository lock.
func (c *Checkpointer) pruneRefs(ctx context.Context, r *repo, keep int, only string) (int, error) {
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
		n, err := r.pruneRef(ctx, t[1], t[0], byID, keep)
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
// c0 … c(n-1) on base B:
//
//	B ← c(n-1) ← … ← c(keep-1) ← … ← c0     becomes     B ← c'(keep-1) ← … ← c'0
//
// c'(keep-1) has c(keep-1)'s tree, so it carries the folded checkpoints'
// changes; every c'i keeps ci's tree, message, author and dates and records
// ci's id in a Sessiond-Was trailer. The ref moves by compare-and-swap; the
// folded commits stay in its reflog until git expires the entries, and are
// then unreferenced. Nothing the ref still reaches was dropped.
func (r *repo) pruneRef(ctx context.Context, ref, tip string, byID map[string]entry, keep int) (int, error) {
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
	if len(chain) <= keep {
		return 0, nil
	}
	dropped := chain[keep:]
	base := ""
	if p := dropped[len(dropped)-1].parents; len(p) > 0 {
		base = p[0]
	}
	parent := base
	for i := keep - 1; i >= 0; i-- {
		e := chain[i]
		m := e.msg
		m.trailers = append([][2]string(nil), m.trailers...)
		if i == keep-1 {
			files, err := r.changedFiles(ctx, base, e.tree)
			if err != nil {
				return 0, err
			}
			m.subject = subjectFor("checkpoint", sid, e.time, len(files))
			m.set(trailerFiles, strconv.Itoa(len(files)))
			m.set(trailerFolded, strconv.Itoa(len(dropped)+m.getInt(trailerFolded)))
		}
		m.set(trailerDepth, strconv.Itoa(keep-i))
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
	reason := fmt.Sprintf("prune: fold %d checkpoints of session %s", len(dropped), sid)
	if err := r.updateRef(ctx, ref, parent, tip, reason); err != nil {
		return 0, err
	}
	return len(dropped), nil
}
