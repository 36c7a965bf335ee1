package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/daemon/state"
)

// StatsRequest names the project whose checkpoint storage Stats measures.
type StatsRequest struct {
	Dir string
	// MaxFileSize and Ignore are as in TakeRequest: the rules under which
	// LeftOut is found.
	MaxFileSize int64
	Ignore      []string
	// Largest is how many left-out entries to report; 0 means 10.
	Largest int
	// ShadowRoot and Credential are as in TakeRequest.
	ShadowRoot string
	Credential *Credential
}

// Stats is what a project's checkpoints hold and cost (sessionctl
// checkpoints --stats).
type Stats struct {
	// Checkpoints and Sessions count the checkpoints listed and the session
	// refs they are on.
	Checkpoints int `json:"checkpoints"`
	Sessions    int `json:"sessions"`
	// Objects counts the git objects (commits, trees, blobs) reachable from
	// the checkpoint refs and from none of the user's branches, tags or
	// remote refs: what checkpoints add to the repository. For a non-git
	// project's shadow repository, that is all of it. Objects only the
	// reflogs of checkpoint refs still reach (folded checkpoints, until git
	// expires their entries) are not counted.
	Objects int `json:"objects"`
	// DiskBytes is their size as stored (compressed, loose or packed: git's
	// %(objectsize:disk)), SizeBytes their size uncompressed.
	DiskBytes int64 `json:"disk_bytes"`
	SizeBytes int64 `json:"size_bytes"`
	// LeftOut is the largest untracked content that checkpoints leave out
	// of the work tree as it is now, largest first.
	LeftOut []LeftOutEntry `json:"left_out"`
}

// LeftOutEntry is a file or directory that checkpoints leave out.
type LeftOutEntry struct {
	// Path is relative to the top of the work tree; a directory ends in /.
	Path string `json:"path"`
	// Bytes is its size (a directory's: of the regular files in it).
	Bytes int64 `json:"bytes"`
	// Files counts the regular files in a directory (1 for a file).
	Files int `json:"files"`
	// Partial is set when a directory was too large to count in full.
	Partial bool `json:"partial,omitempty"`
}

// maxStatWalk bounds the entries counted per left-out directory.
const maxStatWalk = 200000

// Stats measures the checkpoints of a project: how many, the objects and
// bytes they add to the repository, and the largest content they leave
// out. A project without checkpoints has zero of each (and no shadow
// repository is made for it).
func (c *Checkpointer) Stats(ctx context.Context, req StatsRequest) (Stats, error) {
	r, exists, err := c.resolve(ctx, where{dir: req.Dir, shadowRoot: req.ShadowRoot, cred: req.Credential}, false)
	if err != nil {
		return Stats{}, fmt.Errorf("checkpoint stats of %s: %w", req.Dir, err)
	}
	st := Stats{LeftOut: []LeftOutEntry{}}
	if !exists {
		return st, nil
	}
	cps, err := r.list(ctx)
	if err != nil {
		return st, fmt.Errorf("checkpoint stats of %s: %w", r.top, err)
	}
	st.Checkpoints = len(cps)
	refs := map[string]bool{}
	for _, cp := range cps {
		refs[cp.Ref] = true
	}
	st.Sessions = len(refs)
	if len(cps) > 0 {
		if err := r.objectStats(ctx, &st); err != nil {
			return st, fmt.Errorf("checkpoint stats of %s: %w", r.top, err)
		}
	}
	tmp, err := r.mkdirTemp("stats")
	if err != nil {
		return st, fmt.Errorf("checkpoint stats of %s: %w", r.top, err)
	}
	defer removeAll(r.cred, tmp)
	pol := c.policy(req.MaxFileSize, req.Ignore)
	if err := r.pinExcludes(tmp, pol.ignore); err != nil {
		return st, fmt.Errorf("checkpoint stats of %s: %w", r.top, err)
	}
	var env []string
	if r.shadow {
		env = []string{"GIT_INDEX_FILE=" + r.index}
	}
	lo, err := c.leftOut(ctx, r, env, pol, nil)
	if err != nil {
		return st, fmt.Errorf("checkpoint stats of %s: %w", r.top, err)
	}
	// Measured with the user's rights: what the user cannot read is not
	// counted.
	_ = state.FilesOf(r.cred).Do(func() error {
		for _, p := range lo.report {
			st.LeftOut = append(st.LeftOut, measure(r.top, p))
		}
		return nil
	})
	slices.SortStableFunc(st.LeftOut, func(a, b LeftOutEntry) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	n := req.Largest
	if n <= 0 {
		n = 10
	}
	st.LeftOut = st.LeftOut[:min(n, len(st.LeftOut))]
	return st, nil
}

// objectStats counts the objects only checkpoints reach, and their sizes.
func (r *repo) objectStats(ctx context.Context, st *Stats) error {
	res, err := r.run(ctx, nil, nil, "rev-list", "--objects", "--glob="+RefPrefix+"*",
		"--not", "--exclude="+RefPrefix+"*", "--branches", "--tags", "--remotes", "--")
	if err != nil {
		return err
	}
	var ids strings.Builder
	for _, line := range splitLines(res.stdout) {
		id, _, _ := strings.Cut(line, " ")
		ids.WriteString(id + "\n")
	}
	if ids.Len() == 0 {
		return nil
	}
	res, err = r.run(ctx, nil, []byte(ids.String()), "cat-file", "--batch-check=%(objectsize) %(objectsize:disk)", "--buffer")
	if err != nil {
		return err
	}
	for _, line := range splitLines(res.stdout) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue // "missing": a promisor or broken repository
		}
		size, err1 := strconv.ParseInt(f[0], 10, 64)
		disk, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		st.Objects++
		st.SizeBytes += size
		st.DiskBytes += disk
	}
	return nil
}

// measure sizes a left-out file or directory (never following symlinks).
func measure(top, p string) LeftOutEntry {
	e := LeftOutEntry{Path: p}
	full := filepath.Join(top, filepath.FromSlash(strings.TrimSuffix(p, "/")))
	if !strings.HasSuffix(p, "/") {
		if fi, err := os.Lstat(full); err == nil {
			e.Bytes, e.Files = fi.Size(), 1
		}
		return e
	}
	seen := 0
	_ = filepath.WalkDir(full, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > maxStatWalk {
			e.Partial = true
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				e.Bytes += fi.Size()
				e.Files++
			}
		}
		return nil
	})
	return e
}
