package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteAccountReleasesItsLock: once its account is written, a
// session's lock goes (kept as the spare), with the warning; another
// session's lock stays.
func TestWriteAccountReleasesItsLock(t *testing.T) {
	for _, tc := range []struct {
		name, lockOf, release string
		gone                  bool
	}{
		{"its own lock", "a", "a", true},
		{"another session's lock", "b", "a", false},
		{"no release asked", "a", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := OpenProject(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WriteLock(&Lock{SessionID: tc.lockOf, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteWarning(&Warning{SessionID: tc.lockOf}); err != nil {
				t.Fatal(err)
			}
			res := p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
				return AccountWrite{Handoff: &Handoff{SessionID: "a"}, State: &SessionState{}, Progress: ProgressEntry{Time: time.Now(), SessionID: "a"}, Release: tc.release}
			})
			if res.Handoff != nil || res.State != nil || res.Progress != nil || res.Release != nil {
				t.Fatalf("%+v", res)
			}
			sd := filepath.Join(dir, DirName)
			_, lockErr := os.Lstat(filepath.Join(sd, LockFile))
			_, warnErr := os.Lstat(filepath.Join(sd, WarningFile))
			if tc.gone {
				if !os.IsNotExist(lockErr) || !os.IsNotExist(warnErr) {
					t.Errorf("after the account: lock %v, warning %v; want both gone", lockErr, warnErr)
				}
				if _, err := os.Lstat(filepath.Join(sd, SpareName(LockFile))); err != nil {
					t.Errorf("the lock is not kept as its spare: %v", err)
				}
			} else if lockErr != nil {
				t.Errorf("the lock went: %v", lockErr)
			}
			if h, err := p.LoadHandoff(); err != nil || h.SessionID != "a" {
				t.Errorf("handoff: %+v, %v", h, err)
			}
		})
	}
}
