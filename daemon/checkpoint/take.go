package checkpoint

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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

// Result describes a checkpoint that Take made (or skipped).
type Result struct {
	// ID is the checkpoint's commit; when Skipped, the previous checkpoint.
	ID string `json:"id"`
	// Ref is the ref the checkpoint is on (the branch in mode commit).
	Ref string `json:"ref"`
	// Tree is the tree of the work tree as checkpointed: the Base of the
	// next request's Changes.
	Tree string `json:"tree"`
	// Time is when the checkpoint was made (second precision, as in git).
	Time time.Time `json:"time"`
	// FilesChanged is the number of paths that differ from the parent.
	FilesChanged int `json:"files_changed"`
	// Files are those paths, relative to the top of the work tree.
	Files []string `json:"files,omitempty"`
	// Summary is the checkpoint's subject: the turn and the files changed.
	Summary string `json:"summary,omitempty"`
	// Skipped is set when the tree equals the previous checkpoint's: no
	// commit was made.
	Skipped bool `json:"skipped"`
	// LeftOut names untracked content that was left out: directories (with
	// a trailing slash) such as node_modules, and files over MaxFileSize.
	LeftOut []string `json:"left_out,omitempty"`
	// Incremental is set when only the changed paths were read; otherwise
	// the whole work tree was scanned, and FullReason says why.
	Incremental bool   `json:"incremental"`
	FullReason  string `json:"full_reason,omitempty"`
}

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
	tmp, err := r.cred.mkdirTemp(tempBase(r), "sessiond-index-*")
	if err != nil {
		return res, prev, fmt.Errorf("make temporary index: %w", err)
	}
	defer os.RemoveAll(tmp)
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
			os.Remove(filepath.Join(tmp, "index"))
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
			if err := os.Rename(filepath.Join(tmp, "index"), index); err != nil {
				return fmt.Errorf("keep index of %s: %w", r.gitDir, err)
			}
			fi, err := os.Lstat(index)
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

// pinExcludes makes the extra ignore patterns the only excludes file of the
// call's ref-mode git commands (none: no excludes file).
func (r *repo) pinExcludes(tmp string, patterns []string) error {
	file := os.DevNull
	if pats := anchorPatterns(patterns, r.project, r.top); len(pats) > 0 {
		file = filepath.Join(tmp, "exclude")
		if err := r.cred.writePrivateFile(file, []byte(strings.Join(pats, "\n")+"\n"), time.Time{}); err != nil {
			return fmt.Errorf("write ignore patterns: %w", err)
		}
	}
	r.config = append(slices.Clip(r.config), [2]string{"core.excludesFile", file})
	return nil
}

// anchorPatterns moves anchored patterns, written relative to the project,
// to the top of the work tree when the project is a subdirectory of it.
func anchorPatterns(patterns []string, project, top string) []string {
	up, _ := filepath.Rel(top, project)
	up = filepath.ToSlash(up)
	var out []string
	for _, p := range patterns {
		p = strings.TrimRight(p, "\r")
		if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "#") {
			continue
		}
		neg := ""
		if strings.HasPrefix(p, "!") {
			neg, p = "!", p[1:]
		}
		if up != "." && up != "" && strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			p = "/" + up + "/" + strings.TrimPrefix(p, "/")
		}
		out = append(out, neg+p)
	}
	return out
}

// fullScan copies the user's index into tmp (the copy keeps git's stat
// cache, so unchanged files are not hashed again), adds the whole work tree
// to it (minus ignored and left-out content) and writes it as a tree. It
// returns the state an incremental checkpoint can build on next.
func (c *Checkpointer) fullScan(ctx context.Context, r *repo, pol policy, tmp string) (tree string, leftOut []string, st *incState, err error) {
	index := filepath.Join(tmp, "index")
	if err := r.cred.copyUserFile(r.index, index); err != nil {
		return "", nil, nil, fmt.Errorf("copy index %s: %w", r.index, err)
	}
	st = &incState{fullAt: c.now()}
	var tracked *indexFacts
	if !r.shadow {
		// What the user's index holds, read from the copy git is about to
		// change (the state must describe the index the tree was made from).
		// An index git cannot read either makes git add fail below, with
		// git's own words.
		if st.index, st.indexSum, err = indexSig(r.index, index, r.hashLen); err != nil {
			st.noIncremental = "the index cannot be read here: " + err.Error()
		} else {
			tracked, st.noIncremental = readIndexFacts(index, r.hashLen)
		}
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	rulesEnv := env
	if r.shadow {
		// Nothing of a non-git project is tracked: the rules apply to every
		// file, so they are found against an empty index. The copy of the
		// shadow repository's own index only keeps the stat cache, and what
		// the rules leave out now goes from it first.
		rulesEnv = []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "empty")}
	}
	lo, err := c.leftOut(ctx, r, rulesEnv, pol, nil)
	if err != nil {
		return "", nil, nil, err
	}
	leftOut, nested := lo.report, lo.nested
	switch {
	case r.shadow:
		if err := r.dropStale(ctx, env, lo.excludes); err != nil {
			return "", nil, nil, err
		}
	case len(lo.files) > 0:
		under := lo.files
		if tracked != nil {
			under = filesWithEntriesUnder(lo.files, tracked.dirs)
		}
		if len(under) > 0 {
			if err := r.dropUnder(ctx, env, under); err != nil {
				return "", nil, nil, err
			}
		}
	}
	if err := r.addAll(ctx, env, lo.excludes); err != nil {
		return "", nil, nil, err
	}
	if tracked != nil {
		// git add -A took what is in directories that replaced tracked
		// files, where the listing above saw nothing: what the rules leave
		// out goes again.
		df, err := dirsReplacingFiles(index, r.hashLen, tracked)
		if err != nil {
			return "", nil, nil, err
		}
		if len(df) > 0 {
			more, err := c.leftOutUnder(ctx, r, tmp, pol, df)
			if err != nil {
				return "", nil, nil, err
			}
			if len(more.excludes) > 0 {
				if err := r.dropPaths(ctx, env, more.excludes); err != nil {
					return "", nil, nil, err
				}
			}
			leftOut = mergeLeftOut(leftOut, nil, more.report)
			nested = append(nested, more.nested...)
		}
	}
	if tree, err = r.out(ctx, env, "write-tree"); err != nil {
		return "", nil, nil, err
	}
	st.tree, st.leftOut = tree, leftOut
	if st.noIncremental == "" {
		if st.always, err = c.alwaysPaths(ctx, r, env, pol, tracked, nested); err != nil {
			return "", nil, nil, err
		}
		if len(st.always) > maxAlways {
			st.noIncremental = fmt.Sprintf("%d paths would have to be read at every checkpoint", len(st.always))
		}
	}
	return tree, leftOut, st, nil
}

// dropStale removes from a shadow repository's index copy the entries that
// would not be there if nothing were tracked: the ones now ignored, and
// the excluded (large, left-out) ones.
func (r *repo) dropStale(ctx context.Context, env, excludes []string) error {
	res, err := r.run(ctx, env, nil, "ls-files", "-c", "-i", "--exclude-standard", "-z")
	if err != nil {
		return err
	}
	stale := append(splitNUL(res.stdout), excludes...)
	if len(stale) == 0 {
		return nil
	}
	var spec strings.Builder
	for _, p := range stale {
		spec.WriteString(":(literal)" + p + "\x00")
	}
	_, err = r.run(ctx, env, []byte(spec.String()), "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// indexSig is the state of the user's index at path, as copied to copy:
// the copy's trailing checksum and the original's stat data. If the
// original changed since it was copied, the state claims no index (and the
// next checkpoint is a full one).
func indexSig(file, copy string, hashLen int) (fileSig, string, error) {
	ix, err := openIndex(copy, hashLen, nil)
	if err != nil {
		return fileSig{}, "", err
	}
	defer ix.close()
	orig, err := os.Lstat(file)
	if errors.Is(err, os.ErrNotExist) {
		return fileSig{}, "", nil
	}
	if err != nil {
		return fileSig{}, "", err
	}
	// The copy has the original's mtime and size unless the original was
	// replaced meanwhile.
	if int64(len(ix.data)) != orig.Size() || !ix.mtime.Equal(orig.ModTime()) {
		return fileSig{}, "", nil
	}
	return sigOf(orig), hex.EncodeToString(ix.sum), nil
}

// indexFacts is what a full scan learns from the index for the next
// incremental checkpoints.
type indexFacts struct {
	gitlinks []string
	dirs     []string // every directory holding an entry, parents first
	paths    map[string][]string
}

// readIndexFacts reads the gitlinks and the directories of an index, or
// says why it cannot serve incremental checkpoints.
func readIndexFacts(file string, hashLen int) (*indexFacts, string) {
	ix, err := openIndex(file, hashLen, nil)
	if err != nil {
		return nil, "the index cannot be read here: " + err.Error()
	}
	defer ix.close()
	f := &indexFacts{paths: map[string][]string{}}
	seen := map[string]bool{}
	special := ""
	err = ix.scan(func(e *indexEntry) bool {
		p := e.path()
		if e.special() {
			special = p
			return false
		}
		if e.mode() == modeGitlink {
			f.gitlinks = append(f.gitlinks, p)
		}
		d := path.Dir(p)
		f.paths[d] = append(f.paths[d], p)
		for ; d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			f.dirs = append(f.dirs, d)
		}
		return true
	})
	switch {
	case err != nil:
		return nil, "the index cannot be read here: " + err.Error()
	case special != "":
		return nil, fmt.Sprintf("the index has assume-unchanged or skip-worktree entries (%s)", special)
	}
	slices.Sort(f.dirs)
	return f, ""
}

// alwaysPaths are the paths every incremental checkpoint re-adds, because
// they change where the watcher does not look: nested repositories (their
// HEAD moves inside their .git), tracked files that ignore rules match (a
// watcher that read the index before they were tracked takes them for
// ignored) and tracked files in directories the watcher leaves alone
// (ignored, or left out by name). env names the index they are read from.
func (c *Checkpointer) alwaysPaths(ctx context.Context, r *repo, env []string, pol policy, f *indexFacts, nested []string) ([]string, error) {
	out := slices.Clone(nested)
	if f == nil {
		return out, nil
	}
	out = append(out, f.gitlinks...)
	res, err := r.run(ctx, env, nil, "ls-files", "-c", "-i", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	out = append(out, splitNUL(res.stdout)...)
	if len(f.dirs) == 0 {
		return out, nil
	}
	blind := map[string]bool{}
	// Directories beyond a symlink are not in the work tree (and git
	// refuses to answer for them); missing ones are asked about as
	// directories (a trailing slash), since they may come back.
	beyond := map[string]bool{}
	var ask []string
	for _, d := range f.dirs { // parents first
		if beyond[path.Dir(d)] {
			beyond[d] = true
			continue
		}
		if fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(d))); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			beyond[d] = true
			continue
		}
		if b := path.Base(d); b == ".sessiond" || slices.Contains(pol.leaveOut, b) {
			blind[d] = true
		} else {
			ask = append(ask, d)
		}
	}
	var stdin strings.Builder
	for _, d := range ask {
		stdin.WriteString(d + "/\x00")
	}
	g := r.gitRun(env, []byte(stdin.String()))
	g.okCodes = []int{1}
	// --no-index: directories are not index entries, and with the index
	// check-ignore walks all of it for every path it is asked about.
	if res, err = git(ctx, g, "check-ignore", "-z", "--stdin", "--no-index"); err != nil {
		return nil, err
	}
	for _, d := range splitNUL(res.stdout) {
		blind[strings.TrimSuffix(d, "/")] = true
	}
	for _, d := range f.dirs {
		if !blind[d] && !beyond[d] {
			for a := path.Dir(d); a != "."; a = path.Dir(a) {
				if blind[a] {
					blind[d] = true
					break
				}
			}
		}
		if blind[d] {
			out = append(out, f.paths[d]...)
			if len(out) > maxAlways {
				return out, nil
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// addAll runs git add -A on the whole work tree except the excluded paths,
// which go in as literal exclude pathspecs on stdin (no argument limit, no
// glob surprises, no ignore file of the user's touched).
func (r *repo) addAll(ctx context.Context, env []string, excludes []string) error {
	if len(excludes) == 0 {
		_, err := r.run(ctx, env, nil, "add", "-A")
		return err
	}
	var spec strings.Builder
	spec.WriteString(".\x00")
	for _, p := range excludes {
		spec.WriteString(":(exclude,literal)" + p + "\x00")
	}
	_, err := r.run(ctx, env, []byte(spec.String()), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// leftOut finds the untracked content that stays out of a checkpoint, in
// the whole work tree or, for an incremental checkpoint, under specs:
// untracked files over pol.maxFile and untracked pol.leaveOut directories.
// It also returns the untracked nested repositories it met.
//
// git ls-files -o --directory lists wholly untracked directories as one
// entry without descending into them, so a node_modules costs one line, not
// one per file. Entries are excluded exactly as listed, so a tracked file
// is never excluded, even in a directory named like a LeaveOut one. Wholly
// untracked directories are searched in Go for LeaveOut directories and
// large files, and what git ignores among those finds is dropped with one
// git check-ignore. The same function serves both kinds of checkpoint, so
// that they leave out the same.
func (c *Checkpointer) leftOut(ctx context.Context, r *repo, env []string, pol policy, specs []string) (lo leftOutScan, err error) {
	args := []string{"ls-files", "-o", "--directory", "--exclude-standard", "-z"}
	if len(specs) > 0 {
		args = append(args, "--")
		for _, p := range specs {
			args = append(args, ":(literal)"+p)
		}
	}
	res, err := r.run(ctx, env, nil, args...)
	if err != nil {
		return lo, err
	}
	reported := map[string]bool{}
	add := func(exclude, rep string, isDir bool) {
		lo.excludes = append(lo.excludes, exclude)
		if !isDir {
			lo.files = append(lo.files, exclude)
		}
		if !reported[rep] {
			reported[rep] = true
			lo.report = append(lo.report, rep)
		}
	}
	var found []string // in untracked directories: may still be ignored
	for _, p := range splitNUL(res.stdout) {
		isDir := strings.HasSuffix(p, "/")
		p = strings.TrimSuffix(p, "/")
		if d := heavyDir(p, isDir, pol.leaveOut); d != "" {
			add(p, d+"/", isDir)
			continue
		}
		if isDir {
			if _, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p), ".git")); err == nil {
				lo.nested = append(lo.nested, p) // git adds it as a gitlink
				continue
			}
			more, repos := searchUntracked(r.top, p, pol)
			found = append(found, more...)
			lo.nested = append(lo.nested, repos...)
			continue
		}
		fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > pol.maxFile {
			add(p, p, false)
		}
	}
	if len(found) > 0 {
		var stdin strings.Builder
		for _, p := range found {
			stdin.WriteString(strings.TrimSuffix(p, "/") + "\x00")
		}
		g := r.gitRun(env, []byte(stdin.String()))
		g.okCodes = []int{1}
		// --no-index: they are untracked (see alwaysPaths).
		res, err := git(ctx, g, "check-ignore", "-z", "--stdin", "--no-index")
		if err != nil {
			return lo, err
		}
		ignored := map[string]bool{}
		for _, p := range splitNUL(res.stdout) {
			ignored[p] = true
		}
		for _, p := range found {
			if !ignored[strings.TrimSuffix(p, "/")] {
				add(strings.TrimSuffix(p, "/"), p, strings.HasSuffix(p, "/"))
			}
		}
	}
	slices.Sort(lo.report)
	return lo, nil
}

// leftOutUnder finds what stays out under directories that replaced tracked
// files. git ls-files -o --directory lists nothing under such a directory
// (git drops an untracked directory whose name is an index entry), while
// git add -A adds what is in it; so these are listed file by file, against
// an empty index (nothing under them is tracked: a tracked file is where
// they are), in tmp.
func (c *Checkpointer) leftOutUnder(ctx context.Context, r *repo, tmp string, pol policy, dirs []string) (lo leftOutScan, err error) {
	args := []string{"ls-files", "-o", "--exclude-standard", "-z", "--"}
	for _, d := range dirs {
		args = append(args, ":(literal)"+d)
	}
	res, err := r.run(ctx, []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "empty-df")}, nil, args...)
	if err != nil {
		return lo, err
	}
	seen := map[string]bool{}
	for _, p := range splitNUL(res.stdout) {
		if strings.HasSuffix(p, "/") {
			lo.nested = append(lo.nested, strings.TrimSuffix(p, "/")) // a repository: a gitlink
			continue
		}
		// File by file: the left-out directory may hold tracked files.
		if d := heavyDir(p, false, pol.leaveOut); d != "" {
			lo.excludes = append(lo.excludes, p)
			lo.files = append(lo.files, p)
			if !seen[d] {
				seen[d] = true
				lo.report = append(lo.report, d+"/")
			}
			continue
		}
		if fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() && fi.Size() > pol.maxFile {
			lo.excludes = append(lo.excludes, p)
			lo.files = append(lo.files, p)
			lo.report = append(lo.report, p)
		}
	}
	return lo, nil
}

// dirsReplacingFiles returns the tracked files of f that the index at file
// (after git add -A) has directories for.
func dirsReplacingFiles(file string, hashLen int, f *indexFacts) ([]string, error) {
	ix, err := openIndex(file, hashLen, nil)
	if err != nil {
		return nil, err
	}
	defer ix.close()
	var out []string
	last := ""
	err = ix.scan(func(e *indexEntry) bool {
		d := path.Dir(e.path())
		if d == last || d == "." {
			return true
		}
		last = d
		for a := d; a != "."; a = path.Dir(a) {
			if _, tracked := slices.BinarySearch(f.dirs, a); tracked {
				break // a directory of the index before: not one that replaced a file
			}
			if slices.Contains(f.paths[path.Dir(a)], a) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		return true
	})
	return out, err
}

// leftOutScan is what leftOut found.
type leftOutScan struct {
	report   []string // what is left out, directories with a trailing slash
	excludes []string // the exclude pathspecs that leave it out
	files    []string // the excluded paths that are files
	nested   []string // untracked nested repositories met
}

// dropPaths removes from the index in env the entries at or under paths.
func (r *repo) dropPaths(ctx context.Context, env, paths []string) error {
	var spec strings.Builder
	for _, p := range paths {
		spec.WriteString(":(literal)" + p + "\x00")
	}
	_, err := r.run(ctx, env, []byte(spec.String()), "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// dropUnder removes from the index in env the entries under excluded
// files: they were tracked under what was a directory and is now a file
// that is left out, so they are gone from the work tree, and the exclude
// pathspec of the file would hide their going from git add.
func (r *repo) dropUnder(ctx context.Context, env, files []string) error {
	var spec strings.Builder
	for _, f := range files {
		spec.WriteString(":(literal)" + f + "/\x00")
	}
	_, err := r.run(ctx, env, []byte(spec.String()), "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// filesWithEntriesUnder keeps the files that are directories in dirs (the
// sorted directories of an index).
func filesWithEntriesUnder(files, dirs []string) []string {
	var out []string
	for _, f := range files {
		if _, ok := slices.BinarySearch(dirs, f); ok {
			out = append(out, f)
		}
	}
	return out
}

// searchUntracked walks the untracked directory dir (relative to top) for
// LeaveOut directories (returned with a trailing slash, not descended into)
// and files over the size limit. Nested repositories are not entered (git
// adds them as gitlinks); they are returned apart.
func searchUntracked(top, dir string, pol policy) (found, nested []string) {
	root := filepath.Join(top, filepath.FromSlash(dir))
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: git add will say so
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == root {
				return nil
			}
			if slices.Contains(pol.leaveOut, d.Name()) {
				found = append(found, rel+"/")
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				nested = append(nested, rel)
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() > pol.maxFile {
				found = append(found, rel)
			}
		}
		return nil
	})
	return found, nested
}

// heavyDir returns the leading part of path up to and including its first
// directory named in names, or "". The last element counts when path is a
// directory.
func heavyDir(path string, isDir bool, names []string) string {
	dirs := strings.Split(path, "/")
	n := len(dirs) - 1
	if isDir {
		n++
	}
	for i := range n {
		if slices.Contains(names, dirs[i]) {
			return strings.Join(dirs[:i+1], "/")
		}
	}
	return ""
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
