package checkpoint

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
)

// An incremental checkpoint costs what changed, not what the repository
// holds. It builds on the session's last checkpoint (tree T0, made from the
// user's index U and the work tree then) and the watcher's record of the
// paths changed since. What `git add -A` on a copy of U decides for a path
// depends only on U's entries under that path, the work tree under it and
// the ignore rules, so for the changed paths it does just that, on a small
// index holding only U's entries under them (copied byte for byte, stat
// data included, so unchanged files are not hashed again): the same git
// code as the full scan, with the same exclude pathspecs for large files
// and left-out directories, computed the same way. The resulting entries
// replace T0's subtrees at those paths; only the trees from the root down
// to them are rewritten. The full scan's tree is therefore the same, which
// a test checks on random edit sequences.
//
// It holds only while nothing else that decides the tree changed: U (its
// size, times and checksum), the ignore rules (a .gitignore among the
// changed paths, info/exclude, the extra patterns), the size limit, the
// left-out names; and the watcher saw everything. Otherwise, and every
// FullEvery checkpoints or FullAfter, the full scan runs.

// maxIncrementalPaths bounds the changed paths an incremental checkpoint
// takes on; past it the full scan is about as cheap.
const maxIncrementalPaths = 5000

// maxAlways bounds the paths re-read at every incremental checkpoint.
const maxAlways = 2000

// Changes is what a watcher saw change in a project since the session's
// last checkpoint; daemon/watch's Watch.Changes gives it.
type Changes struct {
	// Base is the tree of the checkpoint the record starts at: the Tree of
	// the Result of this session's last Take (made or skipped) taken right
	// after the watcher's mark. If it is not this session's last
	// checkpoint, the checkpoint is a full one.
	Base string
	// Paths are the files and directories changed since, relative to the
	// project dir (a directory stands for everything under it).
	Paths []string
	// Complete reports that Paths holds every change (watch.Changes).
	Complete bool
	// Incomplete says why not, for Result.FullReason.
	Incomplete string
}

// errFallback is an incremental checkpoint that cannot be made: the full
// scan runs instead.
type errFallback struct{ why string }

func (e errFallback) Error() string { return e.why }

// whyFull says why a checkpoint cannot be incremental, or "".
func (c *Checkpointer) whyFull(r *repo, req *TakeRequest, st *incState, prev prevCheckpoint, rules string) string {
	ch := req.Changes
	switch {
	case ch == nil:
		return "no record of changes was given"
	case !ch.Complete:
		why := ch.Incomplete
		if why == "" {
			why = "no reason given"
		}
		return "the record of changes is incomplete: " + why
	case st == nil:
		return "no earlier checkpoint of the session to build on"
	case st.noIncremental != "":
		return st.noIncremental
	case ch.Base != st.tree:
		return "the record of changes does not start at the session's last checkpoint"
	case prev.tree != st.tree:
		return "the session's checkpoint ref moved"
	case r.project != r.top:
		return "the project is a subdirectory of its work tree, which the record does not cover"
	case st.rules != rules:
		return "the ignore rules, the size limit or the left-out directories changed"
	}
	fullEvery, fullAfter := req.FullEvery, req.FullAfter
	if fullEvery == 0 {
		fullEvery = c.opt.FullEvery
	}
	if fullAfter == 0 {
		fullAfter = c.opt.FullAfter
	}
	if fullEvery > 0 && st.since >= fullEvery {
		return fmt.Sprintf("%d incremental checkpoints since the last full scan", st.since)
	}
	if fullAfter > 0 && c.now().Sub(st.fullAt) >= fullAfter {
		return fmt.Sprintf("the last full scan was %s ago", c.now().Sub(st.fullAt).Round(time.Second))
	}
	if len(ch.Paths) > maxIncrementalPaths {
		return fmt.Sprintf("%d paths changed", len(ch.Paths))
	}
	for _, p := range ch.Paths {
		if path.Base(p) == ".gitignore" {
			return "a .gitignore changed"
		}
	}
	return ""
}

// incResult is what an incremental checkpoint made.
type incResult struct {
	tree    string
	leftOut []string
	nested  []string // nested repositories met
	files   []string // files that differ from the last checkpoint
	trees   map[string][]treeEntry
}

// incremental makes the tree of the work tree from st's tree and the
// changed paths, in tmp (a private directory).
func (c *Checkpointer) incremental(ctx context.Context, r *repo, req *TakeRequest, st *incState, pol policy, tmp string) (inc incResult, err error) {
	paths, nested, err := r.changedPaths(req.Changes.Paths, st.always)
	if err != nil {
		return inc, err
	}
	inc.nested = nested

	// The small index: U's entries under the changed paths (none for a
	// shadow repository, whose files are all untracked).
	small := filepath.Join(tmp, "index")
	has := make([]bool, len(paths))
	isFile := make([]bool, len(paths)) // U has a file at exactly the path
	var copied []string
	if !r.shadow {
		if copied, err = r.smallIndex(small, st, paths, has, isFile); err != nil {
			return inc, err
		}
	}
	if len(paths) == 0 {
		inc.tree, inc.leftOut, inc.trees = st.tree, st.leftOut, st.trees
		return inc, nil
	}
	env := []string{"GIT_INDEX_FILE=" + small}

	// git add -A of the changed paths that are in the index or on disk; a
	// path that is in neither went, and its subtree goes.
	var specs, df []string
	dirs := false
	for i, p := range paths {
		fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p)))
		if has[i] || err == nil {
			specs = append(specs, p)
		}
		if err == nil && fi.IsDir() {
			dirs = true
			if isFile[i] {
				df = append(df, p) // a directory replaced a tracked file
			}
		}
	}
	inc.leftOut = mergeLeftOut(st.leftOut, paths, nil)
	if len(specs) > 0 {
		var lo leftOutScan
		if dirs {
			if lo, err = c.leftOut(ctx, r, env, pol, specs); err != nil {
				return inc, err
			}
		} else {
			_ = state.FilesOf(r.cred).Do(func() error {
				lo = leftOutFiles(r.top, specs, paths, isFile, pol)
				return nil
			})
		}
		if len(df) > 0 {
			more, err := c.leftOutUnder(ctx, r, tmp, pol, df)
			if err != nil {
				return inc, err
			}
			lo.excludes = append(lo.excludes, more.excludes...)
			lo.files = append(lo.files, more.files...)
			lo.report = append(lo.report, more.report...)
			lo.nested = append(lo.nested, more.nested...)
		}
		inc.nested = append(inc.nested, lo.nested...)
		inc.leftOut = mergeLeftOut(st.leftOut, paths, lo.report)
		if under := filesWithEntriesUnder(lo.files, dirsOf(copied)); len(under) > 0 {
			if err := r.dropUnder(ctx, env, under); err != nil {
				return inc, err
			}
		}
		if err := r.addPaths(ctx, env, specs, lo.excludes); err != nil {
			return inc, err
		}
	}

	// The new entries, and T0 with its subtrees at the changed paths
	// replaced by them.
	g := newGraft(paths)
	if len(specs) > 0 {
		after, err := openIndex(small, r.hashLen, nil)
		if err != nil {
			return inc, err
		}
		var bad error
		err = after.scan(func(e *indexEntry) bool {
			if e.stage() != 0 {
				bad = fmt.Errorf("%s is unmerged after git add", e.path())
			} else {
				bad = g.addEntry(e.path(), e.mode(), e.oid())
			}
			return bad == nil
		})
		after.close()
		if err = errors.Join(err, bad); err != nil {
			return inc, err
		}
	}
	base, err := hex.DecodeString(st.tree)
	if err != nil {
		return inc, fmt.Errorf("tree %q: %w", st.tree, err)
	}
	ts := newTreeSource(ctx, r, st.trees)
	id, err := g.build(ctx, r, ts, base)
	if cerr := ts.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return inc, err
	}
	inc.tree, inc.files, inc.trees = hex.EncodeToString(id), g.files, ts.kept()
	return inc, nil
}

// smallIndex writes to file the entries of the user's index at or under
// paths, marks the paths that have some, and returns the entries' paths.
// The index must be the one st was made with.
func (r *repo) smallIndex(file string, st *incState, paths []string, has, isFile []bool) ([]string, error) {
	ix, err := openIndex(r.index, r.hashLen, r.cred)
	if err != nil {
		return nil, err
	}
	defer ix.close()
	if ix.sig != st.index || hex.EncodeToString(ix.sum) != st.indexSum {
		return nil, errFallback{"the repository's index changed"}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	var copied []string
	ranges := newPathRanges(paths)
	iw := newIndexWriter(r.hashLen)
	var special string
	err = ix.scan(func(e *indexEntry) bool {
		i := ranges.find(e.name)
		if i < 0 {
			return true
		}
		if e.special() {
			special = e.path()
			return false
		}
		iw.add(e)
		has[i] = true
		if string(e.name) == paths[i] {
			isFile[i] = true
		}
		copied = append(copied, e.path())
		return true
	})
	if err != nil {
		return nil, err
	}
	if special != "" {
		return nil, errFallback{fmt.Sprintf("%s is assume-unchanged or skip-worktree in the index", special)}
	}
	if err := writePrivateFile(r.cred, file, iw.bytes(), ix.mtime); err != nil {
		return nil, fmt.Errorf("write temporary index: %w", err)
	}
	return copied, nil
}

// dirsOf returns the directories holding the paths, sorted.
func dirsOf(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for d := path.Dir(p); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// changedPaths checks and normalises the watcher's paths, maps a path
// inside a nested repository to the repository (a gitlink is all a
// checkpoint holds of it), adds always, and keeps the outermost of nested
// paths, sorted. It returns the nested repositories among them too.
func (r *repo) changedPaths(in, always []string) (out, nested []string, err error) {
	isRepo := map[string]bool{}
	hasGit := func(p string) bool {
		v, ok := isRepo[p]
		if !ok {
			_, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p), ".git"))
			v = err == nil
			isRepo[p] = v
		}
		return v
	}
	set := map[string]bool{}
	for _, p := range in {
		if p == "" || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
			return nil, nil, fmt.Errorf("changed path %q: not a path inside the project", p)
		}
		p = path.Clean(p)
		if p == "." || p == ".." || strings.HasPrefix(p, "../") {
			return nil, nil, fmt.Errorf("changed path %q: not a path inside the project", p)
		}
		if slices.Contains(strings.Split(p, "/"), ".git") {
			continue
		}
		// Inside a nested repository: the repository, outermost first.
		for i := 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				if hasGit(p[:i]) {
					p = p[:i]
					break
				}
			}
		}
		set[p] = true
	}
	for _, p := range always {
		set[p] = true
	}
	for p := range set {
		if hasGit(p) {
			nested = append(nested, p)
		}
		covered := false
		for a := path.Dir(p); a != "."; a = path.Dir(a) {
			if set[a] {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	slices.Sort(nested)
	return out, nested, nil
}

// mergeLeftOut is what stays left out: what was, minus what is under the
// changed paths, plus what was found under them now.
func mergeLeftOut(old, paths, found []string) []string {
	var out []string
	for _, l := range old {
		p := strings.TrimSuffix(l, "/")
		under := false
		for _, c := range paths {
			if p == c || strings.HasPrefix(p, c+"/") || strings.HasPrefix(c, p+"/") {
				under = true
				break
			}
		}
		if !under {
			out = append(out, l)
		}
	}
	for _, f := range found {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// pathRanges finds, for an index entry, the changed path it is at or
// under: each path p covers [p] and [p/, p0), and since the paths are not
// nested the ranges are disjoint, so sorted entries are matched in one
// pass.
type pathRanges struct {
	lo, hi [][]byte
	idx    []int
	next   int
}

func newPathRanges(paths []string) *pathRanges {
	type rg struct {
		lo, hi []byte
		i      int
	}
	var rs []rg
	for i, p := range paths {
		rs = append(rs, rg{[]byte(p), []byte(p + "\x00"), i}, rg{[]byte(p + "/"), []byte(p + "0"), i})
	}
	slices.SortFunc(rs, func(a, b rg) int { return bytes.Compare(a.lo, b.lo) })
	pr := &pathRanges{}
	for _, r := range rs {
		pr.lo, pr.hi, pr.idx = append(pr.lo, r.lo), append(pr.hi, r.hi), append(pr.idx, r.i)
	}
	return pr
}

// find returns the index of the path name is at or under, or -1. Names
// must come in increasing order.
func (pr *pathRanges) find(name []byte) int {
	for pr.next < len(pr.hi) && bytes.Compare(pr.hi[pr.next], name) <= 0 {
		pr.next++
	}
	if pr.next < len(pr.lo) && bytes.Compare(pr.lo[pr.next], name) <= 0 {
		return pr.idx[pr.next]
	}
	return -1
}

// addPaths runs git add -A on the given paths (as literal pathspecs) except
// the excluded ones. Paths that are ignored and untracked make git exit 1
// after it did the rest: that is what the full scan does with them too
// (they stay out).
func (r *repo) addPaths(ctx context.Context, env []string, paths, excludes []string) error {
	var spec strings.Builder
	for _, p := range paths {
		spec.WriteString(":(literal)" + p + "\x00")
	}
	for _, p := range excludes {
		spec.WriteString(":(exclude,literal)" + p + "\x00")
	}
	g := r.gitRun(env, []byte(spec.String()))
	g.okCodes = []int{1}
	res, err := git(ctx, g, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	if err != nil {
		return err
	}
	if res.code == 1 && !strings.HasPrefix(strings.TrimSpace(res.stderr), "The following paths are ignored") {
		return fmt.Errorf("git add -A in %s: exit status 1: %s", r.top, strings.TrimSpace(res.stderr))
	}
	return nil
}

// isFallback reports whether err is only a reason to scan in full.
func isFallback(err error) bool {
	var f errFallback
	return errors.As(err, &f) || errors.Is(err, errIndexUnsupported)
}
