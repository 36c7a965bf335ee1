package state

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// AccountWrite is what one session's end writes to its project: the
// handoff, the project's session state after it, and its progress entry
// in the log ProgressFile ("" for .sessiond/progress.md).
type AccountWrite struct {
	Handoff      *Handoff
	State        *SessionState
	ProgressFile string
	Progress     ProgressEntry
	// Release, when set, is the session whose lock goes once its account
	// is written, with the project's warning (both kept as spares): its
	// end is told in the project, it holds the project no longer.
	Release string
}

// AccountResult says what of an AccountWrite could not be written, and
// why the release did not happen or left the warning.
type AccountResult struct {
	Handoff, State, Progress error
	Release                  error
}

// WriteAccount writes one session's end account to the project. build
// makes it from the project's session state as the ends written before
// it left it (nil for none; err is why it could not be read), and may read
// the project through q, held for the section. Ends of one
// project that come together are written together, in the order they
// came, in one Exclusively section: the state is read once and each
// account built on the one before, handoff.json and session_state.json
// are written once (the last end's handoff, the state after all of them),
// and every entry is appended to the progress log in one write. So a
// thousand ends cost a few syncs, and none loses another's entry or state.
func (p *Project) WriteAccount(build func(q *Project, prev *SessionState, err error) AccountWrite) AccountResult {
	key := p.dir + "\x00" + strconv.Itoa(p.owner.ID())
	q, _ := accountQueues.LoadOrStore(key, &accountQueue{})
	return q.(*accountQueue).write(p, build)
}

// accountQueues are the ends waiting to be written, per project and user.
var accountQueues sync.Map // key -> *accountQueue

type accountQueue struct {
	mu      sync.Mutex
	writing bool
	waiting []*accountRequest
}

type accountRequest struct {
	build func(*Project, *SessionState, error) AccountWrite
	done  chan AccountResult
}

// write queues the request; the first to come while nobody writes writes
// the queue, batch after batch, until it is empty.
func (a *accountQueue) write(p *Project, build func(*Project, *SessionState, error) AccountWrite) AccountResult {
	r := &accountRequest{build: build, done: make(chan AccountResult, 1)}
	a.mu.Lock()
	a.waiting = append(a.waiting, r)
	if a.writing {
		a.mu.Unlock()
		return <-r.done
	}
	a.writing = true
	for len(a.waiting) > 0 {
		batch := a.waiting
		a.waiting = nil
		a.mu.Unlock()
		p.writeAccounts(batch)
		a.mu.Lock()
	}
	a.writing = false
	a.mu.Unlock()
	return <-r.done
}

// writeAccounts writes a batch of ends and answers each: the progress
// entries first, then the handoff and the session state, and the lock's
// release, in one batch of replacements (two syncs for the three).
func (p *Project) writeAccounts(batch []*accountRequest) {
	results := make([]AccountResult, len(batch))
	err := p.Exclusively(func(q *Project) error {
		prev, perr := q.LoadSessionState()
		// No session state yet: the project's first end, whose handoff and
		// state are new names.
		first := prev == nil && perr == nil
		writes := make([]AccountWrite, len(batch))
		for i, r := range batch {
			writes[i] = r.build(q, prev, perr)
			prev, perr = writes[i].State, nil
		}
		// One append per log, the entries in the order the ends came.
		byFile := map[string][]int{}
		var files []string
		for i, w := range writes {
			if _, ok := byFile[w.ProgressFile]; !ok {
				files = append(files, w.ProgressFile)
			}
			byFile[w.ProgressFile] = append(byFile[w.ProgressFile], i)
		}
		// A log made now in .sessiond (a project's first end) takes its
		// name there with the handoff's and the state's: one sync of the
		// directory for the three (owed).
		owed := false
		for _, f := range files {
			idx := byFile[f]
			es := make([]ProgressEntry, len(idx))
			for j, i := range idx {
				es[j] = writes[i].Progress
			}
			_, pErr := q.appendProgress(f, es, &owed)
			for _, i := range idx {
				results[i].Progress = pErr
			}
		}
		// The lock goes with the handoff and the state, if one of the
		// ends whose entry is written holds it.
		var releasing []int
		lockHolder := ""
		for i, w := range writes {
			if pErr := results[i].Progress; w.Release != "" && (pErr == nil || errors.Is(pErr, ErrOutsideProject)) {
				releasing = append(releasing, i)
			}
		}
		if len(releasing) > 0 {
			if l, err := q.ReadLock(); err == nil {
				lockHolder = l.SessionID
			}
		}
		herr, serr, rerr, derr := q.replaceAccount(writes[len(writes)-1].Handoff, prev, len(releasing) > 0, lockHolder != "" && slices.ContainsFunc(releasing, func(i int) bool { return writes[i].Release == lockHolder }), owed, first)
		for i := range results {
			results[i].Handoff, results[i].State = herr, serr
			if owed && derr != nil && results[i].Progress == nil {
				results[i].Progress = fmt.Errorf("append progress: %w", derr)
			}
		}
		for _, i := range releasing {
			results[i].Release = rerr
		}
		return nil
	})
	for i, r := range batch {
		if err != nil {
			results[i] = AccountResult{Handoff: err, State: err, Progress: err}
		}
		r.done <- results[i]
	}
}

// replaceAccount writes h and st into .sessiond as SaveHandoff and
// SaveSessionState do, in one batch of replacements, with the warning
// retired (and the lock, with lock) once both are in place when release.
// With owed, a name made in .sessiond before (a new progress log's) is
// synced with theirs; derr is that sync's error. fresh says the project has
// no session state yet (its first end).
func (p *Project) replaceAccount(h *Handoff, st *SessionState, release, lock, owed, fresh bool) (herr, serr, rerr, derr error) {
	var hdata, sdata []byte
	if h == nil {
		herr = errors.New("save handoff: nil handoff")
	} else if hdata, herr = encodeHandoff(h); herr != nil {
		herr = fmt.Errorf("save handoff: %w", herr)
	}
	if st == nil {
		serr = errors.New("save session state: nil state")
	} else {
		BoundSessionState(st)
		e, err := encodeJSON(st)
		if err != nil {
			serr = fmt.Errorf("save session state: %w", err)
		} else {
			defer e.put()
			sdata = e.indented
		}
	}
	err := p.do(func(root int) error {
		return p.withStateDir(root, true, func(sfd int) error {
			r := replacements{dirfd: sfd, owed: owed, fresh: fresh}
			if herr == nil {
				r.add(HandoffFile, filepath.Join(p.StateDir(), HandoffFile), hdata, 0o600)
			}
			if serr == nil {
				r.add(SessionStateFile, filepath.Join(p.StateDir(), SessionStateFile), sdata, 0o600)
			}
			if release && herr == nil && serr == nil {
				if lock {
					r.retireOnCommit(LockFile, filepath.Join(p.StateDir(), LockFile))
				}
				r.retireOnCommit(WarningFile, filepath.Join(p.StateDir(), WarningFile))
			}
			errs, retired := r.commit()
			if herr == nil {
				herr, errs = errs[0], errs[1:]
				if herr != nil {
					herr = fmt.Errorf("save handoff: %w", herr)
				}
			}
			if serr == nil && errs[0] != nil {
				serr = fmt.Errorf("save session state: %w", errs[0])
			}
			rerr, derr = retired, r.dirErr
			return nil
		})
	})
	if err != nil {
		herr, serr = cmp.Or(herr, fmt.Errorf("save handoff: %w", err)), cmp.Or(serr, fmt.Errorf("save session state: %w", err))
		rerr, derr = err, err
	}
	return herr, serr, rerr, derr
}
