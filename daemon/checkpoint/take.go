package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/ipc/format"
	"go.uber.org/zap"
)

// TakeRequest asks for a checkpoint of a project's work tree for a session.
// Every field but Dir and SessionID is optional.
type TakeRequest struct {
	// Dir is the project directory (any directory of the work tree).
	Dir string
	// SessionID names the session; the checkpoint goes on
	// refs/sessiond/checkpoints/<SessionID>.
	SessionID string
	// Mode is ModeRef (also for "") or ModeCommit. A non-git project always
	// uses ModeRef in its shadow repository.
	Mode Mode
	// Message, if any, becomes the body of the commit message.
	Message string
	// Turn is the agent's turn the checkpoint ends (its prompt, or any
	// label): its first line, shortened (TurnLabel), names the checkpoint,
	// so that the list of checkpoints reads like the conversation's history.
	Turn string
	// MaxFileSize is the size above which an untracked file is left out
	// (checkpoint_max_file); 0 means Options.MaxFileSize.
	MaxFileSize int64
	// Ignore holds extra patterns in gitignore syntax, relative to the
	// project dir, that ref-mode checkpoints leave out: give the same
	// patterns as the watcher's (the spec's [watch] ignore). What the
	// watcher does not see must stay out of checkpoints, or an incremental
	// checkpoint would miss its changes. For the same reason the user's
	// global excludes file does not apply to ref-mode checkpoints (nor to
	// the watcher): what counts as the project's work does not depend on
	// whose HOME the daemon has. Mode commit keeps the user's own rules.
	Ignore []string
	// Changes is the watcher's record since the session's last checkpoint;
	// when it is complete (and nothing else that decides the tree changed)
	// the checkpoint is incremental. nil: a full scan.
	Changes *Changes
	// FullEvery forces a full scan after that many incremental checkpoints
	// of the session; 0 means Options.FullEvery (DefaultFullEvery, 100);
	// negative: no limit.
	FullEvery int
	// FullAfter forces a full scan once the last one is that old; 0 means
	// Options.FullAfter (DefaultFullAfter, 1 hour); negative: no limit.
	FullAfter time.Duration
	// ShadowRoot is where the shadow repository of a non-git project lives
	// (ShadowRoot/<project-id>.git); "" means Options.StateDir/shadow. A root
	// daemon gives each user a shadow root of their own, which the call
	// creates owned by Credential's user.
	ShadowRoot string
	// Credential, if set, is the user every git process of the call runs
	// as, and who owns what it creates.
	Credential *Credential
}

func (req *TakeRequest) where() where {
	return where{dir: req.Dir, shadowRoot: req.ShadowRoot, cred: req.Credential}
}

// policy is what decides, besides the index and the ignore files, what a
// checkpoint leaves out.
type policy struct {
	maxFile  int64
	leaveOut []string
	ignore   []string
}

func (c *Checkpointer) policy(maxFile int64, ignore []string) policy {
	if maxFile <= 0 {
		maxFile = c.opt.MaxFileSize
	}
	return policy{maxFile: maxFile, leaveOut: c.opt.LeaveOut, ignore: ignore}
}

// Result describes a checkpoint taken, or skipped (format.CheckpointResult).
type Result = format.CheckpointResult

// checkpointIdentity is the author and committer of ref-mode checkpoints:
// they are sessiond's commits, and a user without a configured identity must
// still get them.
var checkpointIdentity = []string{
	"GIT_AUTHOR_NAME=sessiond", "GIT_AUTHOR_EMAIL=sessiond@localhost",
	"GIT_COMMITTER_NAME=sessiond", "GIT_COMMITTER_EMAIL=sessiond@localhost",
}

// Take checkpoints the work tree of the project in req.Dir for session
// req.SessionID. In ModeRef (the default) it commits to
// refs/sessiond/checkpoints/<SessionID> and changes nothing of the user's;
// in ModeCommit it commits on the current branch.
func (c *Checkpointer) Take(ctx context.Context, req TakeRequest) (Result, error) {
	if err := checkSessionID(req.SessionID); err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", req.Dir, err)
	}
	if req.Mode != "" && req.Mode != ModeRef && req.Mode != ModeCommit {
		return Result{}, fmt.Errorf("checkpoint %s: mode %q: %w", req.Dir, req.Mode, ErrBadMode)
	}
	r, _, unlock, err := c.open(ctx, req.where(), true)
	if err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", req.Dir, err)
	}
	defer unlock()
	if req.Mode == ModeCommit && !r.shadow {
		res, err := c.takeCommit(ctx, r, &req)
		if err != nil {
			return Result{}, fmt.Errorf("checkpoint %s (mode commit): %w", r.top, err)
		}
		return res, nil
	}
	res, prev, err := c.takeRef(ctx, r, &req)
	if err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", r.top, err)
	}
	if !res.Skipped {
		c.retain(ctx, r, req.SessionID, &res, prev)
	}
	return res, nil
}

// prevCheckpoint is the tip of a session's checkpoint ref.
type prevCheckpoint struct {
	id, tree string
	depth    int
	oldest   int64 // unix time of the ref's oldest checkpoint
}

// tip reads the tip of ref, if it exists.
func (r *repo) tip(ctx context.Context, ref string) (prevCheckpoint, error) {
	res, err := r.run(ctx, nil, nil, "for-each-ref", "--format=%(objectname)%00%(tree)%00%(committerdate:unix)%00%(contents)", ref)
	if err != nil {
		return prevCheckpoint{}, err
	}
	if len(res.stdout) == 0 {
		return prevCheckpoint{}, nil
	}
	f := strings.SplitN(string(res.stdout), "\x00", 4)
	if len(f) != 4 {
		return prevCheckpoint{}, fmt.Errorf("read %s: unexpected output %q", ref, res.stdout)
	}
	m := parseMessage(f[3])
	p := prevCheckpoint{id: f[0], tree: f[1], depth: m.getInt(trailerDepth)}
	p.oldest, _ = strconv.ParseInt(m.get(trailerOldest), 10, 64)
	if p.oldest == 0 {
		p.oldest, _ = strconv.ParseInt(f[2], 10, 64)
	}
	return p, nil
}

// takeRef makes a ref-mode checkpoint. The caller holds the repository lock.
// prev is the ref's tip before.
func (c *Checkpointer) takeRef(ctx context.Context, r *repo, req *TakeRequest) (Result, prevCheckpoint, error) {
	res, prev, err := c.takeRefOnce(ctx, r, req, true)
	if errors.Is(err, ErrConflict) && prev.id != "" {
		// The ref moved since the state this checkpoint built on (another
		// process, a prune of another checkpointer): once more, from the ref
		// as it is.
		c.states.drop(stateKey(r, req.SessionID))
		return c.takeRefOnce(ctx, r, req, false)
	}
	return res, prev, err
}

func (c *Checkpointer) takeRefOnce(ctx context.Context, r *repo, req *TakeRequest, trustState bool) (res Result, prev prevCheckpoint, err error) {
	ref := RefPrefix + req.SessionID
	res.Ref = ref
	key := stateKey(r, req.SessionID)
	st := c.states.get(key)
	if trustState && st != nil && st.tipID != "" && req.Changes != nil {
		// The ref's tip as the last checkpoint left it; update-ref's
		// compare-and-swap below finds out if it moved since.
		prev = st.prev()
	} else if prev, err = r.tip(ctx, ref); err != nil {
		return res, prev, err
	}
	parent := prev.id
	if parent == "" {
		if parent, err = r.head(ctx); err != nil {
			return res, prev, err
		}
	}
	pol := c.policy(req.MaxFileSize, req.Ignore)
	tmp, err := r.mkdirTemp("index")
	if err != nil {
		return res, prev, fmt.Errorf("make temporary index: %w", err)
	}
	defer removeAll(r.cred, tmp)
	if err := r.pinExcludes(tmp, pol.ignore); err != nil {
		return res, prev, err
	}

	rules := r.rulesDigest(pol.ignore, pol.maxFile, pol.leaveOut)
	var next *incState
	var files []string
	res.FullReason = c.whyFull(r, req, st, prev, rules)
	if res.FullReason == "" {
		inc, ierr := c.incremental(ctx, r, req, st, pol, tmp)
		if ierr == nil {
			res.Tree, res.LeftOut, res.Incremental, files = inc.tree, inc.leftOut, true, inc.files
			next = st.advance(inc)
		} else {
			res.FullReason = "incremental checkpoint not possible: " + ierr.Error()
			if !isFallback(ierr) {
				c.log.Info("incremental checkpoint failed; scanning the work tree", zap.String("dir", r.top), zap.Error(ierr))
			}
			// A fresh directory: the small index of the attempt is not the
			// copy the full scan needs.
			_ = asUser(r.cred, func() error { return os.Remove(filepath.Join(tmp, "index")) })
		}
	}
	if !res.Incremental {
		tree, leftOut, fresh, err := c.fullScan(ctx, r, pol, tmp)
		if err != nil {
			return res, prev, err
		}
		res.Tree, res.LeftOut, next = tree, leftOut, fresh
		next.rules = rules
	}
	keep := func() error {
		if r.shadow && !res.Incremental {
			// The shadow repository's own index is ours: keep the refreshed
			// stat cache for the next checkpoint.
			index := filepath.Join(r.gitDir, "index")
			var fi os.FileInfo
			err := asUser(r.cred, func() error {
				if err := os.Rename(filepath.Join(tmp, "index"), index); err != nil {
					return err
				}
				var err error
				fi, err = os.Lstat(index)
				return err
			})
			if err != nil {
				return fmt.Errorf("keep index of %s: %w", r.gitDir, err)
			}
			next.index = sigOf(fi)
		}
		c.states.put(key, next)
		return nil
	}
	if prev.id != "" && res.Tree == prev.tree {
		res.ID, res.Skipped = prev.id, true
		next.tipID, next.depth, next.oldest = prev.id, prev.depth, prev.oldest
		return res, prev, keep()
	}
	if res.Incremental {
		res.Files = files // the graft knows them: no diff-tree
	} else if res.Files, err = r.changedFiles(ctx, parent, res.Tree); err != nil {
		return res, prev, err
	}
	res.FilesChanged = len(res.Files)
	res.Time = c.now().UTC().Truncate(time.Second)
	turn := TurnLabel(req.Turn)
	res.Summary = subjectFor("checkpoint", turn, res.Files, res.FilesChanged)
	oldest := prev.oldest
	if prev.id == "" {
		oldest = res.Time.Unix()
	}
	msg := message{
		subject: res.Summary,
		body:    cleanMessage(req.Message),
		trailers: [][2]string{
			{trailerSession, req.SessionID},
			{trailerFiles, strconv.Itoa(res.FilesChanged)},
			{trailerDepth, strconv.Itoa(prev.depth + 1)},
			{trailerOldest, strconv.FormatInt(oldest, 10)},
		},
	}
	if turn != "" {
		msg.trailers = append(msg.trailers, [2]string{trailerTurn, turn})
	}
	msg.trailers = append(msg.trailers, fileTrailers(res.Files)...)
	date := fmt.Sprintf("%d +0000", res.Time.Unix())
	cenv := append([]string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, checkpointIdentity...)
	if res.ID, err = r.commitTree(ctx, cenv, res.Tree, parent, msg.String()); err != nil {
		return res, prev, err
	}
	if err := r.updateRef(ctx, ref, res.ID, prev.id, msg.subject); err != nil {
		return res, prev, err
	}
	next.tipID, next.depth, next.oldest = res.ID, prev.depth+1, oldest
	return res, prev, keep()
}

// advance is the state after an incremental checkpoint made inc.
func (st *incState) advance(inc incResult) *incState {
	next := *st
	next.tree, next.leftOut, next.since, next.trees = inc.tree, inc.leftOut, st.since+1, inc.trees
	next.always = slices.Clone(st.always)
	for _, n := range inc.nested {
		if !slices.Contains(next.always, n) {
			next.always = append(next.always, n)
		}
	}
	if len(next.always) > maxAlways {
		next.noIncremental = fmt.Sprintf("%d paths would have to be read at every checkpoint", len(next.always))
	}
	return &next
}

// changedFiles lists the paths that differ between commit-or-tree parent and
// tree; every path of tree when parent is "".
func (r *repo) changedFiles(ctx context.Context, parent, tree string) ([]string, error) {
	var res gitResult
	var err error
	if parent == "" {
		res, err = r.run(ctx, nil, nil, "ls-tree", "-r", "--full-tree", "--name-only", "-z", tree)
	} else {
		res, err = r.run(ctx, nil, nil, "diff-tree", "-r", "--name-only", "-z", "--no-renames", "--no-commit-id", parent, tree)
	}
	if err != nil {
		return nil, err
	}
	return splitNUL(res.stdout), nil
}

// commitTree writes a commit of tree with parent (none if "") and returns it.
func (r *repo) commitTree(ctx context.Context, env []string, tree, parent, msg string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	res, err := r.run(ctx, env, []byte(msg), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// updateRef moves ref from old ("" for: must not exist) to id, with a reflog
// entry, failing with ErrConflict if ref is not at old.
func (r *repo) updateRef(ctx context.Context, ref, id, old, reason string) error {
	_, err := r.run(ctx, nil, nil, "-c", "core.logAllRefUpdates=always",
		"update-ref", "--create-reflog", "-m", "sessiond: "+reason, ref, id, old)
	return err
}
