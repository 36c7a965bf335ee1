package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAnEndsFilesShareTheirSyncs: an end's handoff and session state are
// replaced in one batch: both contents are synced while both names still
// hold the old files, then the directory once, by when both names hold
// the new ones and the lock and the warning are retired. Three syncs
// where the files one after the other made five, in two waits rather than
// five.
func TestAnEndsFilesShareTheirSyncs(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, DirName)
	if err := p.SaveHandoff(&Handoff{SessionID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := p.SaveSessionState(&SessionState{CurrentPlan: "old"}); err != nil {
		t.Fatal(err)
	}
	// The progress log is there already: its append is one sync of its own.
	if _, err := p.AppendProgress("", ProgressEntry{Time: time.Now(), SessionID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteLock(&Lock{SessionID: "a", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteWarning(&Warning{SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	holds := func(name, what string) bool {
		b, err := os.ReadFile(filepath.Join(sd, name))
		return err == nil && bytes.Contains(b, []byte(what))
	}
	exists := func(name string) bool { _, err := os.Lstat(filepath.Join(sd, name)); return err == nil }
	type syncSeen struct {
		path                  string
		oldNames, newNames    bool
		lockGone, warningGone bool
	}
	var seen []syncSeen
	fsyncFD = func(fd int) error {
		path, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		seen = append(seen, syncSeen{path: path,
			oldNames:    holds(HandoffFile, `"old"`) && holds(SessionStateFile, `"old"`),
			newNames:    holds(HandoffFile, `"a"`) && holds(SessionStateFile, `"ended"`),
			lockGone:    !exists(LockFile) && exists(SpareName(LockFile)),
			warningGone: !exists(WarningFile)})
		return unix.Fsync(fd)
	}
	syncFS = func(fd int) error { t.Error("a writer alone synced the whole file system"); return unix.Syncfs(fd) }
	t.Cleanup(func() { fsyncFD, syncFS = unix.Fsync, unix.Syncfs })

	res := p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
		return AccountWrite{Handoff: &Handoff{SessionID: "a"}, State: &SessionState{CurrentPlan: "ended"},
			Progress: ProgressEntry{Time: time.Now(), SessionID: "a"}, Release: "a"}
	})
	if res.Handoff != nil || res.State != nil || res.Progress != nil || res.Release != nil {
		t.Fatalf("%+v", res)
	}
	var batch []syncSeen
	for _, s := range seen {
		if !strings.HasSuffix(s.path, "progress.md") {
			batch = append(batch, s)
		}
	}
	if len(batch) != 3 {
		t.Fatalf("the handoff, the state and the release made %d syncs, want 3: %+v", len(batch), seen)
	}
	for _, s := range batch[:2] {
		if !s.oldNames || s.path == sd {
			t.Errorf("a content sync (%s) came after a name changed or was the directory's: %+v", s.path, batch)
		}
	}
	if last := batch[2]; last.path != sd || !last.newNames || !last.lockGone || !last.warningGone {
		t.Errorf("the last sync should be the directory's, with both files in place and the lock and warning retired: %+v", last)
	}
	if !holds(SpareName(HandoffFile), `"old"`) || !holds(SpareName(SessionStateFile), `"old"`) {
		t.Error("the old handoff and state should be kept as the spares")
	}
	// The next end writes into those spares.
	res = p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
		return AccountWrite{Handoff: &Handoff{SessionID: "b"}, State: &SessionState{CurrentPlan: "after b"},
			Progress: ProgressEntry{Time: time.Now(), SessionID: "b"}, Release: "b"}
	})
	if res.Handoff != nil || res.State != nil || res.Progress != nil || res.Release != nil {
		t.Fatalf("%+v", res)
	}
	if !holds(HandoffFile, `"b"`) || !holds(SessionStateFile, `"after b"`) || !holds(SpareName(HandoffFile), `"a"`) || !holds(SpareName(SessionStateFile), `"ended"`) {
		t.Error("the second end should be in place, the first in the spares")
	}
}

// TestAnEndsFilesFailTogether: a content sync that fails leaves the
// handoff and the state as they were, says so for each, and keeps the
// project's lock; the next try writes both.
func TestAnEndsFilesFailTogether(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SaveHandoff(&Handoff{SessionID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteLock(&Lock{SessionID: "a", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, DirName)
	fsyncFD = func(fd int) error {
		if path, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); strings.Contains(path, HandoffFile) {
			return unix.EIO
		}
		return unix.Fsync(fd)
	}
	t.Cleanup(func() { fsyncFD = unix.Fsync })
	write := func() AccountResult {
		return p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
			return AccountWrite{Handoff: &Handoff{SessionID: "a"}, State: &SessionState{CurrentPlan: "ended"},
				Progress: ProgressEntry{Time: time.Now(), SessionID: "a"}, Release: "a"}
		})
	}
	res := write()
	if res.Handoff == nil || res.State == nil || res.Release == nil {
		t.Fatalf("a failed sync of the contents: %+v, want the handoff, the state and the release failed", res)
	}
	if h, err := p.LoadHandoff(); err != nil || h.SessionID != "old" {
		t.Errorf("the handoff after a failed sync: %+v, %v; want the old one", h, err)
	}
	if st, err := p.LoadSessionState(); err != nil || st != nil {
		t.Errorf("a session state was written though its sync failed: %+v, %v", st, err)
	}
	if _, err := os.Lstat(filepath.Join(sd, LockFile)); err != nil {
		t.Errorf("the lock went with a failed end: %v", err)
	}
	fsyncFD = unix.Fsync
	if res := write(); res.Handoff != nil || res.State != nil || res.Progress != nil || res.Release != nil {
		t.Fatalf("the next try: %+v", res)
	}
	if h, err := p.LoadHandoff(); err != nil || h.SessionID != "a" {
		t.Errorf("the handoff after the next try: %+v, %v", h, err)
	}
	if _, err := os.Lstat(filepath.Join(sd, LockFile)); err == nil {
		t.Error("the lock is still there after the next try")
	}
}

// A project's first end makes its progress log out of the spare, and the
// log's name is synced with the handoff's and the state's: one sync of
// .sessiond for the three names, after all three are in place (the log's
// own sync of the directory made two). A failed sync of the directory
// fails the entry too.
func TestAFirstProgressEntrySharesTheDirectorysSync(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareEnd(""); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, DirName)
	if _, err := os.Lstat(filepath.Join(sd, SpareName(ProgressFile))); err != nil {
		t.Fatalf("no spare for the progress log: %v", err)
	}
	exists := func(name string) bool { _, err := os.Lstat(filepath.Join(sd, name)); return err == nil }
	type dirSync struct{ log, handoff, state bool }
	var syncs []dirSync
	failDir := false
	fsyncFD = func(fd int) error {
		if path, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); path == sd {
			syncs = append(syncs, dirSync{exists(ProgressFile), exists(HandoffFile), exists(SessionStateFile)})
			if failDir {
				return unix.EIO
			}
		}
		return unix.Fsync(fd)
	}
	t.Cleanup(func() { fsyncFD = unix.Fsync })
	write := func(id string) AccountResult {
		return p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
			return AccountWrite{Handoff: &Handoff{SessionID: id}, State: &SessionState{CurrentPlan: "after " + id},
				Progress: ProgressEntry{Time: time.Now(), SessionID: id}}
		})
	}
	if res := write("a"); res.Handoff != nil || res.State != nil || res.Progress != nil {
		t.Fatalf("%+v", res)
	}
	if len(syncs) != 1 || !syncs[0].log || !syncs[0].handoff || !syncs[0].state {
		t.Errorf(".sessiond's syncs: %+v; want one, with the log, the handoff and the state in place", syncs)
	}
	if b, err := os.ReadFile(filepath.Join(sd, ProgressFile)); err != nil || !strings.Contains(string(b), "a") || exists(SpareName(ProgressFile)) {
		t.Errorf("the log %q (%v), made from its spare", b, err)
	}

	// The next project's first end, its directory's sync failing.
	dir = t.TempDir()
	if p, err = OpenProject(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareEnd(""); err != nil {
		t.Fatal(err)
	}
	sd, syncs, failDir = filepath.Join(dir, DirName), nil, true
	if res := write("b"); res.Progress == nil || res.Handoff == nil {
		t.Errorf("a failed sync of .sessiond: %+v; want the entry and the handoff failed", res)
	}
}
