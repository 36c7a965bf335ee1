package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
)

// IncludeFile names, in gitignore syntax, the files of the repository's
// work tree that a new worktree gets a copy of: only files git ignores
// there (such as .env), which a checkout cannot bring — the convention of
// Claude Code's worktrees.
const IncludeFile = ".worktreeinclude"

// maxIncludeFiles bounds how many files one .worktreeinclude copies.
const maxIncludeFiles = 10000

// includedFiles lists the files of repo's work tree that .worktreeinclude
// names and that git ignores there, relative to repo. Git reads the
// patterns (as the user), and git decides what is ignored, so that both
// follow gitignore's rules exactly.
func includedFiles(ctx context.Context, repo string, cred *checkpoint.Credential) ([]string, error) {
	inc := filepath.Join(repo, IncludeFile)
	if fi, err := os.Lstat(inc); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", inc, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", inc)
	}
	// Untracked files the include patterns match...
	out, err := checkpoint.Git(ctx, checkpoint.GitRequest{Dir: repo, Credential: cred,
		Args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + inc}})
	if err != nil {
		return nil, fmt.Errorf("list the files %s names: %w", inc, err)
	}
	candidates := strings.Split(strings.TrimSuffix(string(out.Stdout), "\x00"), "\x00")
	if len(candidates) == 1 && candidates[0] == "" {
		return nil, nil
	}
	if len(candidates) > maxIncludeFiles {
		return nil, fmt.Errorf("%s names %d files, more than %d: name fewer (node_modules and the like are for worktree_setup to make)", inc, len(candidates), maxIncludeFiles)
	}
	// ...that the repository's own rules ignore.
	stdin := []byte(strings.Join(candidates, "\x00") + "\x00")
	res, err := checkpoint.Git(ctx, checkpoint.GitRequest{Dir: repo, Credential: cred, OKCodes: []int{1},
		Args: []string{"check-ignore", "-z", "--stdin"}, Stdin: stdin})
	if err != nil {
		return nil, fmt.Errorf("check which files %s names are ignored: %w", inc, err)
	}
	var files []string
	for _, f := range strings.Split(string(res.Stdout), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// copyIncluded copies the files (relative paths) from repo to the
// worktree with owner's filesystem identity: what the user cannot read is
// not copied, and every file and directory made is the user's. A symlink
// is copied as a symlink; modes keep their permission bits (no setuid).
func copyIncluded(owner *state.Owner, repo, wt string, files []string) (copied int, err error) {
	err = state.RunAs(owner, func() error {
		for _, rel := range files {
			if !filepath.IsLocal(rel) {
				return fmt.Errorf("%s: %q leaves the work tree", IncludeFile, rel)
			}
			if err := copyOne(filepath.Join(repo, rel), filepath.Join(wt, rel), wt); err != nil {
				return fmt.Errorf("copy %s into the worktree: %w", rel, err)
			}
			copied++
		}
		return nil
	})
	return copied, err
}

// copyOne copies src to dst, making dst's missing parent directories
// (inside root) with the modes of src's.
func copyOne(src, dst, root string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := mkParents(filepath.Dir(src), filepath.Dir(dst), root); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s exists in the worktree already", dst)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", src)
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return err
	}
	// The umask may have taken bits away.
	return os.Chmod(dst, fi.Mode().Perm())
}

// mkParents makes the directories of dstDir below root that are missing,
// with the permission bits of the matching directories of srcDir.
func mkParents(srcDir, dstDir, root string) error {
	if dstDir == root {
		return nil
	}
	fi, err := os.Lstat(dstDir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dstDir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := mkParents(filepath.Dir(srcDir), filepath.Dir(dstDir), root); err != nil {
		return err
	}
	mode := fs.FileMode(0o755)
	if sfi, err := os.Stat(srcDir); err == nil {
		mode = sfi.Mode().Perm()
	}
	if err := os.Mkdir(dstDir, mode); err != nil {
		return err
	}
	return os.Chmod(dstDir, mode)
}
