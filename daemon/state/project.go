package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DirName is the directory inside a project that holds sessiond's files.
const DirName = ".sessiond"

// File names inside a project's .sessiond directory.
const (
	SessionStateFile = "session_state.json"
	HandoffFile      = "handoff.json"
	ProgressFile     = "progress.md"
	ContextFile      = "context.md"
	LockFile         = "session.lock"
	WarningFile      = "warning.json"
)

// ProjectID returns the project id of an absolute, symlink-resolved project
// path: the first 12 hex digits of the SHA-256 of the path.
func ProjectID(absResolvedPath string) string {
	sum := sha256.Sum256([]byte(absResolvedPath))
	return hex.EncodeToString(sum[:6])
}

// SessionStatePath returns the path of the project's session_state.json.
func SessionStatePath(project string) string {
	return filepath.Join(project, DirName, SessionStateFile)
}

// HandoffPath returns the path of the project's latest handoff.json.
func HandoffPath(project string) string { return filepath.Join(project, DirName, HandoffFile) }

// ProgressPath returns the default path of the project's progress log, used
// when the spec names no progress_file.
func ProgressPath(project string) string { return filepath.Join(project, DirName, ProgressFile) }

// ContextPath returns the path of the context.md handed to the next session.
func ContextPath(project string) string { return filepath.Join(project, DirName, ContextFile) }

// LockPath returns the path of the project's session.lock.
func LockPath(project string) string { return filepath.Join(project, DirName, LockFile) }

// WarningPath returns the path of the warning.json written before a deadline.
func WarningPath(project string) string { return filepath.Join(project, DirName, WarningFile) }

// ProjectDir creates the project's .sessiond directory (mode 0700) and makes
// sure git ignores it, by adding "/.sessiond/" to the repository's
// info/exclude once. The repository is found by looking for .git in the
// project and its parents; a .git file (worktree or submodule) is followed to
// its git dir, and a worktree's commondir to the shared one, without running
// git. A project that is not in a git repository just gets the directory.
// A .sessiond that is a symlink is refused: a cloned repository must not be
// able to point sessiond's writes elsewhere.
func ProjectDir(project string) (string, error) {
	dir := filepath.Join(project, DirName)
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return "", fmt.Errorf("project state directory %s exists and is not a directory (mode %v)", dir, fi.Mode().Type())
	}
	if err := EnsureDir(dir); err != nil {
		return "", err
	}
	if err := excludeFromGit(project); err != nil {
		return "", fmt.Errorf("keep %s out of git: %w", dir, err)
	}
	return dir, nil
}

// excludeFromGit adds the pattern for project's .sessiond to the info/exclude
// of the repository that contains project, if there is one.
func excludeFromGit(project string) error {
	abs, err := filepath.Abs(project)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	top, dotgit, ok := findDotGit(abs)
	if !ok {
		return nil
	}
	common, err := commonGitDir(top, dotgit)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil {
		return err
	}
	pattern := "/" + DirName + "/"
	if rel != "." {
		pattern = "/" + filepath.ToSlash(rel) + pattern
	}
	return addExclude(filepath.Join(common, "info", "exclude"), pattern)
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

// commonGitDir resolves a .git directory or "gitdir:" file to the git
// directory whose info/exclude git reads for that work tree.
func commonGitDir(top, dotgit string) (string, error) {
	gitDir := dotgit
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		data, err := os.ReadFile(dotgit)
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(data), "\n")
		target, found := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		target = strings.TrimSpace(target)
		if !found || target == "" {
			return "", fmt.Errorf("%s: want a line \"gitdir: PATH\", got %q", dotgit, line)
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
	data, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
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

// addExclude appends pattern to the exclude file unless a line already
// ignores the .sessiond directory there. The file belongs to git: its mode is
// kept, and a new one gets git's 0644.
func addExclude(path, pattern string) error {
	data, err := os.ReadFile(path)
	perm := os.FileMode(0o644)
	switch {
	case err == nil:
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
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
	return WriteFile(path, b.Bytes(), perm)
}

// ensureParent makes the directory of path ready for writing: a project's
// .sessiond through ProjectDir (so it is kept out of git whichever file is
// written first), any other missing directory with mode 0700.
func ensureParent(path string) error {
	dir := filepath.Dir(path)
	if filepath.Base(dir) == DirName {
		_, err := ProjectDir(filepath.Dir(dir))
		return err
	}
	return os.MkdirAll(dir, 0o700)
}
