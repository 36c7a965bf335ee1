package checkpoint

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// emptyTree is the id of the empty tree.
func emptyTree(hashLen int) string {
	return hex.EncodeToString(objectID("tree", nil, hashLen))
}

// takeCommit commits work in progress on the current branch with the user's
// index. The caller holds the repository lock.
func (c *Checkpointer) takeCommit(ctx context.Context, r *repo, req *TakeRequest) (Result, error) {
	if what := r.inProgress(); what != "" {
		return Result{}, fmt.Errorf("a %s is in progress: %w", what, ErrInProgress)
	}
	g := r.gitRun(nil, nil)
	g.okCodes = []int{1}
	res0, err := git(ctx, g, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return Result{}, err
	}
	if res0.code == 1 {
		return Result{}, fmt.Errorf("cannot commit on a detached HEAD: %w", ErrDetached)
	}
	res := Result{Ref: strings.TrimSpace(string(res0.stdout))}
	lo, err := c.leftOut(ctx, r, nil, c.policy(req.MaxFileSize, nil), nil)
	if err != nil {
		return res, err
	}
	res.LeftOut = lo.report
	if len(lo.files) > 0 {
		if err := r.dropUnder(ctx, nil, lo.files); err != nil {
			return res, err
		}
	}
	if err := r.addAll(ctx, nil, lo.excludes); err != nil {
		return res, err
	}
	// Plumbing, which runs no external diff or textconv.
	parent, err := r.head(ctx)
	if err != nil {
		return res, err
	}
	base := parent
	if base == "" {
		base = emptyTree(r.hashLen)
	}
	g = r.gitRun(nil, nil)
	g.okCodes = []int{1}
	staged, err := git(ctx, g, "diff-index", "--cached", "--quiet", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return res, err
	}
	if staged.code == 0 {
		res.Skipped = true
		res.ID, err = r.head(ctx)
		if err == nil && res.ID != "" {
			res.Tree, err = r.out(ctx, nil, "rev-parse", res.ID+"^{tree}")
		}
		return res, err
	}
	tree, err := r.out(ctx, nil, "write-tree")
	if err != nil {
		return res, err
	}
	if res.Files, err = r.changedFiles(ctx, parent, tree); err != nil {
		return res, err
	}
	res.Tree, res.FilesChanged = tree, len(res.Files)
	res.Time = c.now().UTC().Truncate(time.Second)
	turn := TurnLabel(req.Turn)
	res.Summary = subjectFor("WIP checkpoint", turn, res.Files, res.FilesChanged)
	res.FullReason = "mode commit scans the work tree"
	msg := message{
		subject: res.Summary,
		body:    cleanMessage(req.Message),
		trailers: [][2]string{
			{trailerSession, req.SessionID},
			{trailerFiles, strconv.Itoa(res.FilesChanged)},
		},
	}
	if turn != "" {
		msg.trailers = append(msg.trailers, [2]string{trailerTurn, turn})
	}
	msg.trailers = append(msg.trailers, fileTrailers(res.Files)...)
	var env []string
	if _, err := r.out(ctx, nil, "var", "GIT_COMMITTER_IDENT"); err != nil {
		env = checkpointIdentity // no identity configured: commit as sessiond
	}
	// --no-verify and no hooks: a checkpoint runs nothing of the user's.
	// --no-gpg-sign: a signing prompt would hang an unattended checkpoint.
	if _, err := r.run(ctx, env, []byte(msg.String()), "commit", "--no-verify", "--no-gpg-sign", "-q", "-F", "-"); err != nil {
		return res, err
	}
	res.ID, err = r.head(ctx)
	return res, err
}
