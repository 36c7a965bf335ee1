package main

import (
	"os"
	"path/filepath"
	"strings"
)

// unstableLocation says why exe is a poor place for the executable a
// service runs — a temporary directory, a Go build cache, a source checkout:
// cleaned up or rebuilt there, the service breaks — or returns "".
func unstableLocation(exe string) string {
	exe = filepath.Clean(exe)
	dir := filepath.Dir(exe)
	// A checkout first: its bin/ is often under /tmp too, and the more
	// telling reason.
	for d, depth := dir, 0; ; d, depth = filepath.Dir(d), depth+1 {
		if exists(filepath.Join(d, "go.mod")) {
			return "in a Go source tree (" + d + ")"
		}
		// A .git right above bin/ or dist/; a home directory kept in git
		// (dotfiles) further up does not count.
		if depth <= 1 && exists(filepath.Join(d, ".git")) {
			return "in a source checkout (" + d + ")"
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, c := range goBuildCaches() {
		if within(exe, c) {
			return "in the Go build cache (" + c + ")"
		}
	}
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		if strings.HasPrefix(part, "go-build") {
			return "in a `go run` or `go test` build directory"
		}
	}
	for _, t := range tempDirs() {
		if within(exe, t) {
			return "in a temporary directory (" + t + ")"
		}
	}
	return ""
}

func tempDirs() []string {
	dirs := []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"}
	var out []string
	for _, d := range dirs {
		out = append(out, d)
		// macOS: /tmp is /private/tmp, TMPDIR is under /private/var/folders.
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			out = append(out, r)
		}
	}
	return out
}

func goBuildCaches() []string {
	var dirs []string
	if c := os.Getenv("GOCACHE"); c != "" && c != "off" {
		dirs = append(dirs, c)
	}
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "go-build"))
	}
	return dirs
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
