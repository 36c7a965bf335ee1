package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sessiond/sessiond/daemon/proc"
)

// Trees are read and made here, a few at a time, so that an incremental
// checkpoint rewrites only the trees on the way from the root to what
// changed: the previous checkpoint's trees are read with one git cat-file
// --batch, the new ones are encoded (and their ids computed) in Go and
// written with one git mktree --batch, which checks every entry and gives
// back the ids it wrote; they must equal the computed ones.

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode uint32
	oid  []byte // raw
}

func (e treeEntry) isDir() bool { return e.mode == modeDir }

// sortKey orders tree entries as git does: a directory sorts as if its
// name ended in "/".
func (e treeEntry) sortKey() string {
	if e.isDir() {
		return e.name + "/"
	}
	return e.name
}

// encodeTree sorts entries and returns the tree object's content.
func encodeTree(entries []treeEntry) []byte {
	slices.SortFunc(entries, func(a, b treeEntry) int { return strings.Compare(a.sortKey(), b.sortKey()) })
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(strconv.FormatUint(uint64(e.mode), 8))
		b.WriteByte(' ')
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(e.oid)
	}
	return b.Bytes()
}

// parseTree reads a tree object's content.
func parseTree(body []byte, hashLen int) ([]treeEntry, error) {
	var out []treeEntry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		if sp < 0 {
			return nil, errors.New("bad tree entry: no mode")
		}
		mode, err := strconv.ParseUint(string(body[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("bad tree entry mode %q", body[:sp])
		}
		body = body[sp+1:]
		nul := bytes.IndexByte(body, 0)
		if nul < 0 || nul+1+hashLen > len(body) {
			return nil, errors.New("bad tree entry: truncated")
		}
		out = append(out, treeEntry{name: string(body[:nul]), mode: uint32(mode), oid: slices.Clone(body[nul+1 : nul+1+hashLen])})
		body = body[nul+1+hashLen:]
	}
	return out, nil
}

// objectID is the id git gives an object of kind with body.
func objectID(kind string, body []byte, hashLen int) []byte {
	var h hash.Hash = sha1.New()
	if hashLen == 32 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "%s %d\x00", kind, len(body))
	h.Write(body)
	return h.Sum(nil)
}

// batchGit is a long-lived git process fed on stdin.
type batchGit struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err *bytes.Buffer
}

func (r *repo) startBatch(ctx context.Context, args ...string) (*batchGit, error) {
	full := append(append(append([]string{}, baseArgs...), r.shadowArgs()...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = r.top
	cmd.Env = gitEnv(r.cred, r.config, nil)
	cmd.SysProcAttr = sysProcAttr(r.cred)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killDelay
	b := &batchGit{cmd: cmd, err: &bytes.Buffer{}}
	cmd.Stderr = b.err
	var err error
	if b.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("start git %s in %s: %w", subcommand(args), r.top, err)
	}
	b.out = bufio.NewReaderSize(out, 64<<10)
	return b, nil
}

// close ends the process and waits for it.
func (b *batchGit) close() error {
	_ = b.in.Close()
	_, _ = io.Copy(io.Discard, b.out)
	if err := proc.Wait(b.cmd); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(b.err.String()))
	}
	return nil
}

// treeSource reads tree objects by id: from the trees an earlier call kept,
// else through a git cat-file --batch started on the first miss. It keeps
// every tree it read or that was made (used), for the next call.
type treeSource struct {
	ctx     context.Context
	r       *repo
	b       *batchGit
	cache   map[string][]treeEntry // by raw id
	used    map[string][]treeEntry
	entries int // in used
}

// maxCachedEntries bounds the tree entries a session's state keeps.
const maxCachedEntries = 1024

func newTreeSource(ctx context.Context, r *repo, cache map[string][]treeEntry) *treeSource {
	return &treeSource{ctx: ctx, r: r, cache: cache, used: map[string][]treeEntry{}}
}

func (ts *treeSource) keep(id []byte, entries []treeEntry) {
	if _, ok := ts.used[string(id)]; !ok {
		ts.used[string(id)] = entries
		ts.entries += len(entries)
	}
}

// read returns the entries of the tree oid.
func (ts *treeSource) read(oid []byte) ([]treeEntry, error) {
	if e, ok := ts.cache[string(oid)]; ok {
		ts.keep(oid, e)
		return e, nil
	}
	if ts.b == nil {
		b, err := ts.r.startBatch(ts.ctx, "cat-file", "--batch")
		if err != nil {
			return nil, err
		}
		ts.b = b
	}
	id := hex.EncodeToString(oid)
	if _, err := io.WriteString(ts.b.in, id+"\n"); err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", id, err)
	}
	line, err := ts.b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("cat-file %s: %w (%s)", id, err, strings.TrimSpace(ts.b.err.String()))
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[1] != "tree" {
		return nil, fmt.Errorf("cat-file %s: want a tree, got %q", id, strings.TrimSpace(line))
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 {
		return nil, fmt.Errorf("cat-file %s: bad size in %q", id, strings.TrimSpace(line))
	}
	body := make([]byte, size+1)
	if _, err := io.ReadFull(ts.b.out, body); err != nil {
		return nil, fmt.Errorf("cat-file %s: %w", id, err)
	}
	entries, err := parseTree(body[:size], ts.r.hashLen)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", id, err)
	}
	ts.keep(oid, entries)
	return entries, nil
}

// close ends the cat-file process, if one was started.
func (ts *treeSource) close() error {
	if ts.b == nil {
		return nil
	}
	if err := ts.b.close(); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	return nil
}

// kept is what to keep for the next call, or nil past the bound.
func (ts *treeSource) kept() map[string][]treeEntry {
	if ts.entries > maxCachedEntries {
		return nil
	}
	return ts.used
}

// treeWriter gathers new trees, children before parents, and writes them
// all with one git mktree --batch.
type treeWriter struct {
	hashLen int
	input   bytes.Buffer
	ids     [][]byte
	seen    map[string]bool
	src     *treeSource // keeps the trees made, for the next call
}

func newTreeWriter(hashLen int, src *treeSource) *treeWriter {
	return &treeWriter{hashLen: hashLen, seen: map[string]bool{}, src: src}
}

// add queues the tree of entries and returns its id.
func (w *treeWriter) add(entries []treeEntry) []byte {
	body := encodeTree(entries)
	id := objectID("tree", body, w.hashLen)
	if w.src != nil {
		w.src.keep(id, entries)
	}
	if w.seen[string(id)] {
		return id
	}
	w.seen[string(id)] = true
	for _, e := range entries {
		kind := "blob"
		switch e.mode {
		case modeDir:
			kind = "tree"
		case modeGitlink:
			kind = "commit"
		}
		fmt.Fprintf(&w.input, "%06o %s %x\t%s\x00", e.mode, kind, e.oid, e.name)
	}
	w.input.WriteByte(0)
	w.ids = append(w.ids, id)
	return id
}

// write stores the queued trees.
func (w *treeWriter) write(ctx context.Context, r *repo) error {
	if len(w.ids) == 0 {
		return nil
	}
	g := r.gitRun(nil, w.input.Bytes())
	res, err := git(ctx, g, "mktree", "--batch", "-z")
	if err != nil {
		return err
	}
	got := splitLines(res.stdout)
	if len(got) != len(w.ids) {
		return fmt.Errorf("git mktree wrote %d trees, want %d", len(got), len(w.ids))
	}
	for i, id := range w.ids {
		if got[i] != hex.EncodeToString(id) {
			return fmt.Errorf("git mktree wrote tree %s, computed %x", got[i], id)
		}
	}
	return nil
}
