package checkpoint

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/daemon/state"
)

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
	// The tree is the user's, looked at with the user's rights: a
	// directory swapped for a link to one the user cannot read shows
	// nothing of it.
	_ = state.FilesOf(r.cred).Do(func() error {
		found = c.untracked(r, splitNUL(res.stdout), pol, &lo, add)
		return nil
	})
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

// untracked goes through what git ls-files -o --directory listed: dependency
// directories and large files are left out (add), nested repositories
// noted, and the untracked directories searched; it returns what it found
// in them, which git may still ignore. It runs with the user's rights.
func (c *Checkpointer) untracked(r *repo, listed []string, pol policy, lo *leftOutScan, add func(exclude, rep string, isDir bool)) (found []string) {
	for _, p := range listed {
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
	return found
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
	listed := splitNUL(res.stdout)
	// Sizes are looked at with the user's rights.
	_ = state.FilesOf(r.cred).Do(func() error {
		lo = under(r, listed, pol, seen, lo)
		return nil
	})
	return lo, nil
}

// under is leftOutUnder's look at each file git listed.
func under(r *repo, listed []string, pol policy, seen map[string]bool, lo leftOutScan) leftOutScan {
	for _, p := range listed {
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
	return lo
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

// leftOutFiles is leftOut for changed paths that are none of them
// directories, without git: such a path is the only untracked thing under
// itself, and the watcher found it not ignored. An untracked one is left
// out in a left-out directory or over the size limit.
func leftOutFiles(top string, specs, paths []string, isFile []bool, pol policy) leftOutScan {
	var lo leftOutScan
	tracked := map[string]bool{}
	for i, p := range paths {
		tracked[p] = isFile[i]
	}
	for _, p := range specs {
		if tracked[p] {
			continue
		}
		if d := heavyDir(p, false, pol.leaveOut); d != "" {
			lo.excludes, lo.files = append(lo.excludes, p), append(lo.files, p)
			lo.report = append(lo.report, d+"/")
			continue
		}
		fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > pol.maxFile {
			lo.excludes, lo.files, lo.report = append(lo.excludes, p), append(lo.files, p), append(lo.report, p)
		}
	}
	slices.Sort(lo.report)
	lo.report = slices.Compact(lo.report)
	return lo
}
