package state

import (
	"errors"
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

// writeAccounts writes a batch of ends and answers each.
func (p *Project) writeAccounts(batch []*accountRequest) {
	results := make([]AccountResult, len(batch))
	err := p.Exclusively(func(q *Project) error {
		prev, perr := q.LoadSessionState()
		writes := make([]AccountWrite, len(batch))
		for i, r := range batch {
			writes[i] = r.build(q, prev, perr)
			prev, perr = writes[i].State, nil
		}
		herr := q.SaveHandoff(writes[len(writes)-1].Handoff)
		serr := q.SaveSessionState(prev)
		// One append per log, the entries in the order the ends came.
		byFile := map[string][]int{}
		var files []string
		for i, w := range writes {
			if _, ok := byFile[w.ProgressFile]; !ok {
				files = append(files, w.ProgressFile)
			}
			byFile[w.ProgressFile] = append(byFile[w.ProgressFile], i)
		}
		for _, f := range files {
			idx := byFile[f]
			es := make([]ProgressEntry, len(idx))
			for j, i := range idx {
				es[j] = writes[i].Progress
			}
			_, pErr := q.appendProgress(f, es)
			for _, i := range idx {
				results[i] = AccountResult{Handoff: herr, State: serr, Progress: pErr}
			}
		}
		for i, w := range writes {
			if r := &results[i]; w.Release != "" && r.Handoff == nil && r.State == nil && (r.Progress == nil || errors.Is(r.Progress, ErrOutsideProject)) {
				r.Release = q.release(w.Release)
			}
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

// release retires the lock when it is session id's, and the warning.
func (p *Project) release(id string) error {
	var lockErr error
	if l, err := p.ReadLock(); err == nil && l.SessionID == id {
		lockErr = p.RemoveLock()
	}
	return errors.Join(lockErr, p.RemoveWarning())
}
