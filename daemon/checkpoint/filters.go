package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A filter driver (filter.<name>.clean, .smudge, .process in a config,
// chosen by a filter= attribute in .gitattributes) is a program git runs on
// file contents. Config cannot name drivers by wildcard, so every driver
// that the repository's and the user's config define is overridden by name
// with empty commands, which git 2.39 takes as "no filter", and
// required=false, without which an empty clean command is a fatal error.
// Checkpoints then store what is in the work tree, byte for byte (after the
// end-of-line conversion git does itself), and restore writes it back as
// stored.
//
// Finding the drivers costs a git config run; the answer is kept per
// repository until one of the config files it came from (or the usual
// places for one that does not exist yet) changes.

// filterCache remembers the filter overrides of each repository.
type filterCache struct {
	mu sync.Mutex
	m  map[string]filterEntry // by common git dir and HOME
}

type filterEntry struct {
	files  map[string]fileSig // config files read, and their state then
	config [][2]string
}

// filterConfig returns the config overrides that turn off every filter
// driver r's config defines.
func (c *Checkpointer) filterConfig(ctx context.Context, r *repo) ([][2]string, error) {
	home := os.Getenv("HOME")
	if r.cred != nil {
		home = r.cred.Home
	}
	key := r.commonDir + "\x00" + home
	c.filters.mu.Lock()
	e, ok := c.filters.m[key]
	c.filters.mu.Unlock()
	if ok && e.fresh() {
		return e.config, nil
	}
	files := map[string]fileSig{}
	for _, f := range r.configPaths(home) {
		files[f] = statSig(f)
	}
	res, err := git(ctx, gitRun{dir: r.top, pre: r.shadowArgs(), cred: r.cred, timeout: r.timeout, okCodes: []int{1}},
		"config", "--list", "--show-origin", "--name-only", "-z")
	if err != nil {
		return nil, err
	}
	var names []string
	f := splitNUL(res.stdout)
	for i := 0; i+1 < len(f); i += 2 {
		origin, name := f[i], f[i+1]
		if p, ok := strings.CutPrefix(origin, "file:"); ok {
			if _, seen := files[p]; !seen {
				files[p] = statSig(p)
			}
		}
		rest, ok := strings.CutPrefix(strings.ToLower(name), "filter.")
		dot := strings.LastIndexByte(rest, '.')
		if !ok || dot <= 0 {
			continue
		}
		switch rest[dot+1:] {
		case "clean", "smudge", "process", "required":
			// The subsection (the driver's name) keeps its case.
			driver := name[len("filter.") : len("filter.")+dot]
			if !slices.Contains(names, driver) {
				names = append(names, driver)
			}
		}
	}
	var config [][2]string
	for _, n := range names {
		config = append(config,
			[2]string{"filter." + n + ".clean", ""},
			[2]string{"filter." + n + ".smudge", ""},
			[2]string{"filter." + n + ".process", ""},
			[2]string{"filter." + n + ".required", "false"})
	}
	c.filters.mu.Lock()
	if c.filters.m == nil || len(c.filters.m) > 4096 {
		c.filters.m = map[string]filterEntry{}
	}
	c.filters.m[key] = filterEntry{files: files, config: config}
	c.filters.mu.Unlock()
	return config, nil
}

func (e filterEntry) fresh() bool {
	for f, sig := range e.files {
		if statSig(f) != sig {
			return false
		}
	}
	return true
}

// configPaths are the config files git reads for r (without system config),
// whether they exist or not: a new one must invalidate the cache too.
func (r *repo) configPaths(home string) []string {
	paths := []string{filepath.Join(r.commonDir, "config"), filepath.Join(r.gitDir, "config.worktree")}
	if home != "" {
		paths = append(paths, filepath.Join(home, ".gitconfig"))
		xdg := filepath.Join(home, ".config")
		if r.cred == nil {
			if v := os.Getenv("XDG_CONFIG_HOME"); v != "" {
				xdg = v
			}
		}
		paths = append(paths, filepath.Join(xdg, "git", "config"))
	}
	return paths
}

// fileSig tells a file's versions apart without reading it.
type fileSig struct {
	size, ino    uint64
	mtime, ctime int64
	exists       bool
}

func statSig(path string) fileSig {
	fi, err := os.Stat(path)
	if err != nil {
		return fileSig{}
	}
	return sigOf(fi)
}

func sigOf(fi os.FileInfo) fileSig {
	sig := fileSig{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano(), exists: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.ino = st.Ino
		sig.ctime = statCtime(st)
	}
	return sig
}
