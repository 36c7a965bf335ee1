package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrGitExclude is matched by errors.Is when .sessiond could not be added
// to the repository's info/exclude; the .sessiond directory itself is fine,
// so a caller may report this and carry on.
var ErrGitExclude = errors.New("could not keep .sessiond out of git")

// excludeFromGit adds the pattern for project's .sessiond to the
// info/exclude of the repository that contains project, if there is one.
// The repository is found by looking for .git in the project and its
// parents; a .git file (worktree or submodule) is followed to its git dir,
// and a worktree's commondir to the shared one, without running git. The
// git dir may lie outside the project (a linked worktree's does), so it is
// not confined: it runs with the caller's thread's rights, which are the
// project owner's, and the kernel refuses what the owner could not do.
// project is absolute with symlinks resolved.
func excludeFromGit(project string) error {
	top, dotgit, ok := findDotGit(project)
	if !ok {
		return nil
	}
	common, err := commonGitDir(top, dotgit)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(top, project)
	if err != nil {
		return err
	}
	pattern := "/" + DirName + "/"
	if rel != "." {
		pattern = "/" + filepath.ToSlash(rel) + pattern
	}
	return addExclude(filepath.Join(common, "info"), pattern)
}

// findDotGit walks up from dir to the first directory holding .git.
func findDotGit(dir string) (top, dotgit string, ok bool) {
	for {
		p := filepath.Join(dir, ".git")
		if _, err := os.Lstat(p); err == nil {
			return dir, p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", false
		}
		dir = parent
	}
}

// readInput reads the input file at path (following symlinks) as readAt
// does: non-blocking, a regular file, at most limit bytes.
func readInput(path string, limit int64) ([]byte, uint32, error) {
	fd, err := openat(unix.AT_FDCWD, path, inputFlags, 0)
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return readOpened(fd, path, limit)
}

// commonGitDir resolves a .git directory or "gitdir:" file to the git
// directory whose info/exclude git reads for that work tree.
func commonGitDir(top, dotgit string) (string, error) {
	gitDir := dotgit
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		data, _, err := readInput(dotgit, MaxSmallFileSize)
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(data), "\n")
		target, found := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		target = strings.TrimSpace(target)
		if !found || target == "" {
			return "", fmt.Errorf("%s: want a line \"gitdir: PATH\", got %q", dotgit, TerminalLine(truncate(line, 80)))
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(top, target)
		}
		gitDir = target
	}
	if fi, err := os.Stat(gitDir); err != nil {
		return "", fmt.Errorf("git directory of %s: %w", top, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("git directory %s of %s is not a directory", gitDir, top)
	}
	data, _, err := readInput(filepath.Join(gitDir, "commondir"), MaxSmallFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return "", err
	}
	common := strings.TrimSpace(string(data))
	if common == "" {
		return gitDir, nil
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	return filepath.Clean(common), nil
}

// addExclude appends pattern to info/exclude in the git dir's info
// directory unless a line already ignores the .sessiond directory there.
// The file belongs to git: its mode is kept, a new one gets git's 0644, and
// a symlinked exclude is written through to its target, as git reads it.
func addExclude(info, pattern string) error {
	dir, name, err := resolveFinal(info, "exclude")
	if errors.Is(err, fs.ErrNotExist) && dir == info {
		if err := os.Mkdir(info, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		dir, name, err = resolveFinal(info, "exclude")
	}
	if err != nil {
		return err
	}
	dfd, err := openDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	path := filepath.Join(dir, name)
	perm := os.FileMode(0o644)
	data, mode, err := readAt(dfd, name, path, MaxExcludeSize, true)
	switch {
	case err == nil:
		perm = os.FileMode(mode & 0o777)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		switch strings.TrimSpace(line) {
		// An unanchored .sessiond ignores the directory at any depth.
		case pattern, strings.TrimSuffix(pattern, "/"), DirName, DirName + "/":
			return nil
		}
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(pattern + "\n")
	return writeAt(dfd, name, path, b.Bytes(), perm)
}

// resolveFinal follows dir/name while it is a symlink and returns the
// directory and name of the file it ends at (which need not exist). The
// error wraps fs.ErrNotExist when dir itself is missing.
func resolveFinal(dir, name string) (string, string, error) {
	for range maxSymlinks {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if _, derr := os.Stat(dir); derr != nil {
				return dir, name, derr
			}
			return dir, name, nil
		}
		if err != nil {
			return "", "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return dir, name, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		dir, name = filepath.Dir(target), filepath.Base(target)
	}
	return "", "", &fs.PathError{Op: "resolve", Path: filepath.Join(dir, name), Err: unix.ELOOP}
}
