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
	"strings"
)

// fullScan copies the user's index into tmp (the copy keeps git's stat
// cache, so unchanged files are not hashed again), adds the whole work tree
// to it (minus ignored and left-out content) and writes it as a tree. It
// returns the state an incremental checkpoint can build on next.
func (c *Checkpointer) fullScan(ctx context.Context, r *repo, pol policy, tmp string) (tree string, leftOut []string, st *incState, err error) {
	index := filepath.Join(tmp, "index")
	if err := copyUserFile(r.cred, r.index, index); err != nil {
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
