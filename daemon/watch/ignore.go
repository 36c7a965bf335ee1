package watch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/gitignore"
	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
)

// alwaysIgnored reports whether a relative, slash-separated path lies in a
// directory that is never watched whatever the ignore rules say: git's own
// internals (of the project or of a nested repository) and sessiond's state.
// git check-ignore does not report .git as ignored, so it is decided here.
func alwaysIgnored(rel string) bool {
	for rel != "" {
		var name string
		if i := strings.IndexByte(rel, '/'); i >= 0 {
			name, rel = rel[:i], rel[i+1:]
		} else {
			name, rel = rel, ""
		}
		if name == ".git" || name == ".sessiond" {
			return true
		}
	}
	return false
}

// ignorer answers "is this path ignored?" for one project with git's own
// rules, by asking git check-ignore. A project is split into domains: the
// project root and every nested repository (a directory holding .git, such as
// a submodule), because git refuses pathspecs that reach into a submodule and
// a nested repository has rules of its own. Each domain has its own
// check-ignore coprocess, started on first use and stopped when idle.
type ignorer struct {
	log      func() *zap.Logger
	root     string   // project root, absolute
	patterns []string // extra patterns, relative to root
	hub      *Hub
	name     string // unique per Watch, to name the excludes files
	// user is the project's, whom git runs as (nil: the daemon's own).
	user *identity.User
	// quit is closed when the watch closes: a git still asked is killed.
	quit    <-chan struct{}
	domains map[string]*checker
	warned  bool
}

func newIgnorer(h *Hub, log func() *zap.Logger, root string, patterns []string, name string, user *identity.User, quit <-chan struct{}) *ignorer {
	if !user.Switches() {
		user = nil
	}
	return &ignorer{
		log:      log,
		root:     root,
		patterns: patterns,
		hub:      h,
		name:     name,
		user:     user,
		quit:     quit,
	}
}

// addDomain records that rel (a directory under the root, "" for the root)
// holds a repository of its own.
func (ig *ignorer) addDomain(rel string) {
	if _, ok := ig.domains[rel]; ok {
		return
	}
	setIn(&ig.domains, rel, &checker{ig: ig, rel: rel})
}

// dropDomains forgets the domains at or under rel (a directory that is gone).
func (ig *ignorer) dropDomains(rel string) {
	for d, c := range ig.domains {
		if d != "" && (d == rel || strings.HasPrefix(d, rel+"/")) {
			c.close()
			delete(ig.domains, d)
		}
	}
}

// domainOf returns the deepest domain that holds rel.
func (ig *ignorer) domainOf(rel string) string {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		if d == "." {
			d = ""
		}
		if _, ok := ig.domains[d]; ok {
			return d
		}
		if d == "" {
			return ""
		}
	}
}

// ignored reports for each relative path whether git would ignore it. A path
// that git cannot judge counts as not ignored: watching a little too much is
// better than missing a change.
func (ig *ignorer) ignored(rels []string) []bool {
	out := make([]bool, len(rels))
	if len(rels) == 0 {
		return out
	}
	ig.addDomain("")
	byDomain := make(map[string][]int)
	for i, r := range rels {
		if alwaysIgnored(r) {
			out[i] = true
			continue
		}
		d := ig.domainOf(r)
		byDomain[d] = append(byDomain[d], i)
	}
	for d, idx := range byDomain {
		c := ig.domains[d]
		paths := make([]string, len(idx))
		for j, i := range idx {
			if d == "" {
				paths[j] = rels[i]
			} else {
				paths[j] = rels[i][len(d)+1:]
			}
		}
		res, err := c.query(paths)
		if err != nil {
			// Said once at Warn: a missing git would otherwise fill the log.
			lvl := zap.DebugLevel
			if !ig.warned {
				ig.warned, lvl = true, zap.WarnLevel
			}
			ig.log().Log(lvl, "git check-ignore failed; treating paths as not ignored",
				zap.String("domain", d), zap.Error(err))
		}
		for j, i := range idx {
			out[i] = res[j]
		}
	}
	return out
}

// excludesChanged reports whether the info/exclude file of a repository of
// the project changed since the last call (or since its domain was
// configured). The watcher never watches .git, so it looks: a stat or two
// per repository and batch of events. A coprocess whose repository's index
// changed since it started is stopped too: check-ignore reads the index
// once, and a file tracked since would still be judged by the patterns.
func (ig *ignorer) excludesChanged() bool {
	changed := false
	for _, c := range ig.domains {
		if !c.configured {
			continue
		}
		if c.infoExcl != "" {
			if sig := statSig(c.infoExcl); sig != c.infoSig {
				c.infoSig = sig
				changed = true
			}
		}
		if c.cmd != nil && c.index != "" && statSig(c.index) != c.indexSig {
			c.stop()
		}
	}
	return changed
}

// fileSig is what tells a file's versions apart without reading it.
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
	sig := fileSig{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano(), ctime: statusChangeTime(fi).UnixNano(), exists: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.ino = st.Ino
	}
	return sig
}

// stop ends every coprocess; they start again on the next query. It is also
// how a changed .gitignore takes effect, since git caches the files it read.
func (ig *ignorer) stop() {
	for _, c := range ig.domains {
		c.stop()
	}
}

// busy reports whether a git coprocess runs.
func (ig *ignorer) busy() bool {
	for _, c := range ig.domains {
		if c.cmd != nil {
			return true
		}
	}
	return false
}

// close ends every coprocess and removes the excludes files.
func (ig *ignorer) close() {
	for _, c := range ig.domains {
		c.close()
	}
}

// checker is one long-lived `git check-ignore --stdin` for one domain.
type checker struct {
	ig  *ignorer
	rel string // domain root relative to the project root

	configured bool
	// unchecked: the repository was taken for one from its layout, without
	// asking git (see plainRepo); noRepo: git refused it, and the domain
	// uses the hub's empty repository.
	unchecked, noRepo bool
	dir               string // the domain's directory; paths are relative to it
	gitDir            string
	workTree          string
	excludes          string
	infoExcl          string          // the repository's info/exclude, "" for none
	infoSig           fileSig         // its state when the domain was configured
	index             string          // the repository's index, "" for none
	indexSig          fileSig         // its state when the coprocess started
	tracked           map[string]bool // tracked files that ignore rules match, and their directories, then
	// kept are, by left-out directory (relative to the domain), the
	// tracked files in it and the directories that hold them, as git's
	// index had them when asked; forgotten when the coprocess stops.
	kept map[string]map[string]bool

	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *limitedBuffer
}

// configure finds the repository of the domain, or falls back to the hub's
// empty repository for directories that are not in one, and writes the
// domain's excludes file.
func (c *checker) configure() error {
	ig := c.ig
	c.dir = filepath.Join(ig.root, filepath.FromSlash(c.rel))
	var prefix string // domain dir relative to the work tree top, for the root domain
	top := findRepoTop(c.dir)
	if c.rel != "" {
		top = c.dir
	}
	var paths [2]string
	ok := false
	if top != "" && !c.noRepo {
		if paths, ok = plainRepo(filepath.Join(top, ".git")); ok {
			c.unchecked = true
		} else {
			paths, ok = ig.validRepo(filepath.Join(top, ".git"), top)
		}
	}
	if ok {
		c.gitDir, c.workTree = filepath.Join(top, ".git"), top
		c.infoExcl, c.infoSig = paths[0], statSig(paths[0])
		c.index = paths[1]
		if c.rel == "" && top != c.dir {
			rel, err := filepath.Rel(top, c.dir)
			if err != nil {
				return fmt.Errorf("locate %s in repository %s: %w", c.dir, top, err)
			}
			prefix = filepath.ToSlash(rel)
		}
	} else {
		if top != "" {
			ig.log().Warn("not a usable git repository; using ignore files without it",
				zap.String("dir", top))
		}
		empty, err := ig.hub.emptyRepo(ig.user)
		if err != nil {
			return err
		}
		c.gitDir, c.workTree = empty, c.dir
	}
	pats := gitignore.Rebase(ig.patterns, prefix, c.rel)
	c.excludes = os.DevNull
	if len(pats) > 0 {
		tmp, err := ig.hub.userTemp(ig.user)
		if err != nil {
			return err
		}
		// Written as the user, in the user's own directory: git, running
		// as the user, reads it.
		err = state.FilesOf(ig.user).Do(func() error {
			f, err := os.CreateTemp(tmp, ig.name+"-*.exclude")
			if err != nil {
				return fmt.Errorf("write ignore patterns for %s: %w", c.dir, err)
			}
			_, werr := f.WriteString(strings.Join(pats, "\n") + "\n")
			cerr := f.Close()
			if err := errors.Join(werr, cerr); err != nil {
				return fmt.Errorf("write ignore patterns to %s: %w", f.Name(), err)
			}
			c.excludes = f.Name()
			return nil
		})
		if err != nil {
			return err
		}
	}
	c.configured = true
	return nil
}

// findRepoTop returns the nearest directory at or above dir that holds .git,
// or "".
func findRepoTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// plainRepo returns the paths of the info/exclude and the index of gitDir
// when it is a repository's own directory (not a gitfile, not a linked
// worktree's), where git keeps them; it saves asking git (validRepo), a
// process of its own at every watch's start. Whether git accepts the
// repository shows at its first command (checker.start).
func plainRepo(gitDir string) (paths [2]string, ok bool) {
	fi, err := os.Lstat(gitDir)
	if err != nil || !fi.IsDir() {
		return paths, false
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); !errors.Is(err, fs.ErrNotExist) {
		return paths, false
	}
	if fi, err := os.Lstat(filepath.Join(gitDir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return paths, false
	}
	return [2]string{filepath.Join(gitDir, "info", "exclude"), filepath.Join(gitDir, "index")}, true
}

// validRepo reports whether git, run as the project's user, accepts gitDir
// (a directory or a gitfile) as a repository with workTree as its work
// tree, and returns the paths of its info/exclude and its index.
func (ig *ignorer) validRepo(gitDir, workTree string) (paths [2]string, ok bool) {
	if workTree == "" {
		return paths, false
	}
	var out bytes.Buffer
	args := append([]string{"--git-dir=" + gitDir, "--work-tree=" + workTree}, hardening...)
	cmd := exec.Command("git", append(args, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude", "--git-path", "index")...)
	cmd.Dir = workTree
	cmd.Env = gitEnv()
	cmd.SysProcAttr = ig.sysProcAttr()
	cmd.Stdout = &out
	if proc.Run(cmd) != nil {
		return paths, false
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		return paths, false
	}
	return [2]string{lines[0], lines[1]}, true
}

// hardening keeps every git command of the watcher from running a program
// named by the repository's or the user's config: no hooks, no fsmonitor,
// no transport. safe.directory=*: a root daemon asks about users'
// repositories, and check-ignore runs nothing of theirs.
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "protocol.allow=never",
	"-c", "safe.directory=*",
}

// gitTimeout bounds one git command of the watcher (ls-files of a large
// repository takes seconds); askTimeout one batch of questions to its
// check-ignore, which git answers in milliseconds.
const (
	gitTimeout = 10 * time.Second
	askTimeout = 5 * time.Second
)

// sysProcAttr starts the watcher's git as the project's user, in a
// process group of its own.
func (ig *ignorer) sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: ig.user.Credential()}
}

// gitEnv is a small, clean environment for the watcher's git: none of the
// daemon's variables that would point git at another repository, index or
// config, no system or global config (the ignore rules must not depend on
// whose HOME the daemon has), C messages.
func gitEnv() []string {
	env := []string{
		"LC_ALL=C",
		// GIT_FLUSH: answer each path at once, not when a pipe buffer fills.
		"GIT_FLUSH=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
	}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (c *checker) start() error {
	if !c.configured {
		if err := c.configure(); err != nil {
			return err
		}
	}
	args := append([]string{"--git-dir=" + c.gitDir, "--work-tree=" + c.workTree,
		"-c", "core.excludesFile=" + c.excludes}, hardening...)
	if c.index != "" {
		c.indexSig = statSig(c.index) // before git reads it
		tracked, err := c.trackedIgnored(args)
		if err != nil && c.unchecked {
			// A repository by its layout that git may refuse: asked now.
			c.unchecked = false
			if _, ok := c.ig.validRepo(c.gitDir, c.workTree); !ok {
				c.close()
				c.noRepo = true
				return c.start()
			}
		}
		if err != nil {
			return err
		}
		c.tracked = tracked
	}
	// --no-index: with the index, check-ignore walks all of it for every
	// path (to refuse paths inside submodules), milliseconds per question
	// in a large repository. Tracked files, which ignore rules do not apply
	// to, are told apart with c.tracked instead.
	cmd := exec.Command("git", append(args, "check-ignore", "--stdin", "-z", "--verbose", "--non-matching", "--no-index")...)
	cmd.Dir = c.dir
	cmd.Env = gitEnv()
	cmd.SysProcAttr = c.ig.sysProcAttr()
	c.stderr = &limitedBuffer{max: 4096}
	cmd.Stderr = c.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("git check-ignore in %s: %w", c.dir, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git check-ignore in %s: %w", c.dir, err)
	}
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("start git check-ignore in %s: %w", c.dir, err)
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReaderSize(out, 4<<10)
	return nil
}

// stop ends the coprocess: EOF on its stdin makes git exit; a git that does
// not is killed after a bound.
func (c *checker) stop() {
	c.kept = nil // the index may have changed: asked again
	if c.cmd == nil {
		return
	}
	cmd, in := c.cmd, c.in
	c.cmd, c.in, c.out = nil, nil, nil
	_ = in.Close()
	done := make(chan struct{})
	go func() {
		_ = proc.Wait(cmd)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// close ends the coprocess and removes the excludes file.
func (c *checker) close() {
	c.stop()
	if c.excludes != "" && c.excludes != os.DevNull {
		_ = os.Remove(c.excludes)
	}
	c.excludes, c.configured = "", false
	c.unchecked, c.noRepo = false, false
}

// query asks git about paths (relative to the domain). A path that makes git
// die (a race with a symlink or a submodule appearing) is answered "not
// ignored" and skipped, and git is started again for the rest.
func (c *checker) query(paths []string) ([]bool, error) {
	res := make([]bool, len(paths))
	var lastErr error
	for i, fails := 0, 0; i < len(paths); {
		select {
		case <-c.ig.quit:
			return res, ErrClosed
		default:
		}
		if c.cmd == nil {
			if err := c.start(); err != nil {
				return res, err
			}
		}
		n, err := c.roundTrip(paths[i:], res[i:])
		i += n
		if err == nil {
			break
		}
		stderr := c.stderr
		c.kill() // after this, git's stderr is no longer written
		msg := strings.TrimSpace(stderr.String())
		lastErr = fmt.Errorf("git check-ignore in %s on %q: %w (%s)", c.dir, paths[min(i, len(paths)-1)], err, msg)
		c.ig.log().Debug("git check-ignore stopped", zap.Error(lastErr))
		i++ // the path git died on stays "not ignored"
		if fails++; fails >= 3 {
			return res, lastErr
		}
	}
	return res, nil
}

// kill ends a coprocess that misbehaved.
func (c *checker) kill() {
	if c.cmd != nil {
		_ = c.cmd.Process.Kill()
	}
	c.stop()
}

// roundTrip sends paths and reads one answer per path; it returns how many
// answers it read. The paths are written from another goroutine so that a
// large batch cannot deadlock on two full pipes.
func (c *checker) roundTrip(paths []string, res []bool) (int, error) {
	in := c.in
	werr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(in, 4<<10)
		for _, p := range paths {
			if _, err := bw.WriteString(p); err != nil {
				werr <- err
				return
			}
			if err := bw.WriteByte(0); err != nil {
				werr <- err
				return
			}
		}
		werr <- bw.Flush()
	}()
	// A git that answers nothing (its repository's info/exclude a FIFO,
	// say) is killed: a question never holds the watch up for long.
	cmd := c.cmd
	answered := make(chan struct{})
	go func() {
		t := time.NewTimer(askTimeout)
		defer t.Stop()
		select {
		case <-answered:
			return
		case <-c.ig.quit:
		case <-t.C:
		}
		_ = cmd.Process.Kill()
	}()
	n, err := c.readAnswers(paths, res)
	close(answered)
	if err != nil {
		// Unblock the writer before waiting for it.
		_ = c.cmd.Process.Kill()
		_ = in.Close()
		<-werr
		return n, err
	}
	if err := <-werr; err != nil {
		return n, fmt.Errorf("write paths: %w", err)
	}
	return n, nil
}

func (c *checker) readAnswers(paths []string, res []bool) (int, error) {
	var field [4]string
	for i, p := range paths {
		for k := range field {
			s, err := c.out.ReadString(0)
			if err != nil {
				return i, fmt.Errorf("read answer: %w", err)
			}
			field[k] = s[:len(s)-1]
		}
		// source, line number, pattern, path; no source means no match.
		if field[3] != p {
			return i, fmt.Errorf("answer for %q, want %q", field[3], p)
		}
		res[i] = field[0] != "" && !strings.HasPrefix(field[2], "!") && !c.tracked[p]
	}
	return len(paths), nil
}

// keeps reports whether rel, the left-out directory dir (node_modules,
// dist, ...) or a path in it, both relative to the project root, is a
// tracked file or a directory that holds one: what a checkpoint holds
// there, and so what the watcher watches there.
func (ig *ignorer) keeps(dir, rel string) bool {
	ig.addDomain("")
	d := ig.domainOf(dir)
	c := ig.domains[d]
	if c == nil {
		return false
	}
	if d != "" {
		dir, rel = dir[len(d)+1:], rel[len(d)+1:]
	}
	return c.keptIn(dir)[rel]
}

// keptIn is c.kept of the left-out directory dir (relative to the
// domain), asked of git's index once.
func (c *checker) keptIn(dir string) map[string]bool {
	if set, ok := c.kept[dir]; ok {
		return set
	}
	set := map[string]bool{}
	if c.kept == nil {
		c.kept = map[string]map[string]bool{}
	}
	c.kept[dir] = set
	if !c.configured {
		if err := c.configure(); err != nil {
			return set
		}
	}
	if c.index == "" {
		return set // no repository: nothing tracked
	}
	args := append([]string{"--git-dir=" + c.gitDir, "--work-tree=" + c.workTree}, hardening...)
	got, err := c.lsFiles(append(args, "ls-files", "-z", "-c", "--", ":(literal)"+dir+"/"))
	if err != nil {
		c.ig.log().Debug("git ls-files of a left-out directory failed; nothing tracked taken there", zap.String("dir", dir), zap.Error(err))
		return set
	}
	c.kept[dir] = got
	return got
}

// trackedIgnored lists the tracked files of the domain that ignore rules
// match, and the directories that hold them: to git they are not ignored.
func (c *checker) trackedIgnored(args []string) (map[string]bool, error) {
	return c.lsFiles(append(args, "ls-files", "-z", "-c", "-i", "--exclude-standard"))
}

// lsFiles runs git (argv: a git ls-files -z, with the domain's repository)
// as the project's user, bounded, and returns the paths it lists and the
// directories that hold them.
func (c *checker) lsFiles(argv []string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.ig.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = c.dir
	cmd.Env = gitEnv()
	cmd.SysProcAttr = c.ig.sysProcAttr()
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr := &limitedBuffer{max: 4096}
	cmd.Stderr = stderr
	if err := proc.Run(cmd); err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w (%s)", c.dir, err, strings.TrimSpace(stderr.String()))
	}
	m := map[string]bool{}
	for _, p := range strings.Split(out.String(), "\x00") {
		if p == "" {
			continue
		}
		m[p] = true
		// The directories that hold it, ignored or left out as they may
		// be (target/, dist/), are watched: an edit of the file counts.
		for d := path.Dir(p); d != "." && d != "/" && !m[d]; d = path.Dir(d) {
			m[d] = true
		}
	}
	return m, nil
}

// limitedBuffer keeps the first max bytes written to it (git's stderr).
type limitedBuffer struct {
	max int
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	if b == nil {
		return ""
	}
	return b.buf.String()
}
