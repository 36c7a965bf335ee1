package sessions

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Recover loads the records of earlier runs. A session recorded as live is
// adopted if its process is proven to be still the one recorded (same
// pid, start time and boot), else it ended unobserved and is ended
// (crashed) — or, if the earlier daemon had recorded its end, that end is
// finished. Nothing a record says stops the daemon: unreadable and
// mismatched records are skipped, and one line says what was done with
// each.
func (d *Service) Recover() {
	root := filepath.Join(d.cfg.StateDir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("read sessions", zap.Error(err))
		}
		return
	}
	// A daemon that died may have left the running records of its last
	// starts written and not synced (state.WriteRecordLazily): one sync of
	// the state dir's file system puts them on disk before any record is
	// written over its spare, which holds the one before.
	if len(entries) > 0 {
		if err := state.SyncFS(root); err != nil {
			d.log.Warn("sync the state dir before recovery", zap.Error(err))
		}
	}
	// The stops an earlier daemon began whose sessions' records do not say
	// so yet.
	stops, err := d.stops.load()
	if err != nil {
		d.log.Warn("the stops under way when the last daemon ended are unreadable; their sessions go on running", zap.Error(err))
	}
	var sum recoverySummary
	var live, queued, ended []*session.Session
	// unreadable are the sessions whose record (and its previous version)
	// cannot be read: nothing says whether they run, so nothing of theirs
	// is killed.
	unreadable := map[string]bool{}
	owners := ownerCache{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if state.IsSpareDir(e.Name()) {
			continue
		}
		if strings.HasPrefix(e.Name(), removedPrefix) {
			// A removal the last daemon did not finish.
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				d.log.Warn("finish removing a session", zap.String("dir", e.Name()), zap.Error(err))
			}
			continue
		}
		var rec ipc.Session
		path := filepath.Join(root, e.Name(), "session.json")
		aside, err := state.RecoverRecord(path, &rec)
		if aside != nil && err == nil {
			d.log.Warn("session record unreadable: its previous version is used", zap.String("session", e.Name()), zap.Error(aside))
		}
		if err != nil {
			// None, or an empty one (a spare's, or one a crash of the
			// machine or a full disk cut off before its first sync): a
			// start that never got as far as its record, so was never
			// answered. Its directory goes, unless its log holds output:
			// a crash of the machine can leave a starting record unsynced
			// after its command ran.
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, state.ErrEmpty) {
				sum.unreadable++
				unreadable[e.Name()] = true
				d.log.Warn("skipping unreadable session record; what the session runs is left running, unsupervised",
					zap.String("path", path), zap.Error(err))
				continue
			}
			if fi, err := os.Lstat(filepath.Join(root, e.Name(), "output.log")); err == nil && fi.Size() > 0 {
				continue
			}
			gone := filepath.Join(root, removedPrefix+e.Name())
			rerr := os.Rename(filepath.Join(root, e.Name()), gone)
			if rerr == nil {
				rerr = os.RemoveAll(gone)
			}
			if rerr != nil {
				d.log.Warn("remove the directory of a start that never got as far as its record", zap.String("dir", e.Name()), zap.Error(rerr))
			} else {
				sum.unstarted++
			}
			continue
		}
		if rec.ID != e.Name() {
			sum.mismatched++
			d.log.Warn("skipping session record with a mismatched id", zap.String("path", path), zap.String("id", rec.ID))
			continue
		}
		sum.records++
		if in, ok := stops[rec.ID]; ok && applyStop(&rec, in) {
			d.stops.adopt(rec.ID, in)
		}
		sp := d.cfg.Defaults.Clone()
		if rec.Spec != nil {
			sp = *rec.Spec
		}
		owner, err := owners.get(rec.UID)
		var proj *state.Project
		if err == nil {
			proj, err = state.OpenProject(rec.ProjectDir, owner)
		}
		if err != nil {
			if ipc.Live(rec.State) {
				sum.unreachable++
			}
			d.log.Debug("project of a recorded session unreachable", zap.String("session", rec.ID), zap.Error(err))
		} else if p, err := spec.Project(proj, d.cfg.Defaults.Clone()); err == nil {
			// Env values are in no record: take the project's and the
			// daemon's again; Load puts the values given with --env back
			// from the session's directory.
			sp.Env = p.Env
		}
		if aside != nil && proj != nil && rec.State == ipc.StateStarting && rec.PID == 0 && !rec.TTY {
			repairFromLock(&rec, proj, d.log)
		}
		if proj != nil && ipc.Live(rec.State) {
			d.notes.LoadProject(proj)
		}
		s := session.Load(rec, sp, proj, owner, d.deps)
		d.reg.Add(s)
		if a := rec.Agent; a != nil && a.Limit != nil && ipc.Live(rec.State) {
			d.limited(s, *a.Limit)
		}
		switch {
		case rec.State == ipc.StateQueued:
			queued = append(queued, s)
		case ipc.Live(rec.State):
			live = append(live, s)
		case rec.State == ipc.StateEnded:
			ended = append(ended, s)
		}
	}
	ending := d.recoverLive(live, &sum)
	// The queued wait on in this daemon's queue, once every record is
	// known (a session they start after among them), in the order they
	// came: first come goes first among equals, as before the restart.
	slices.SortStableFunc(queued, func(a, b *session.Session) int {
		ra, rb := a.Snapshot(), b.Snapshot()
		var sa, sb time.Time
		if ra.Queue != nil {
			sa = ra.Queue.Since
		}
		if rb.Queue != nil {
			sb = rb.Queue.Since
		}
		return cmp.Or(sa.Compare(sb), strings.Compare(ra.ID, rb.ID))
	})
	for _, s := range queued {
		s.Requeue()
		d.queue.add(s, interactiveSpec(s.Spec()))
		sum.queued++
	}
	// The ends found are written before the daemon answers, so that
	// nobody sees a dead session as running; they run in parallel.
	deadline := time.NewTimer(recoverTimeout)
	defer deadline.Stop()
	pending := 0
	for _, s := range ending {
		if pending > 0 {
			select {
			case <-s.Done():
			default:
				pending++
			}
			continue
		}
		select {
		case <-s.Done():
		case <-deadline.C:
			pending++
		}
	}
	sum.pending = pending
	sum.swept = d.sweepOrphans(unreadable)
	d.sweepCgroups(unreadable)
	d.trimHistory()
	for _, s := range d.reg.All() {
		if rec := s.Snapshot(); rec.Stop != nil && rec.Stop.Restart && !ipc.Live(rec.State) {
			go d.finishRestart(s)
		}
	}
	sum.restarts = d.resumeRestarts(ended)
	if sum.records+sum.unreadable+sum.mismatched+sum.swept+sum.unstarted+sum.restarts > 0 {
		d.log.Info("recovered session records", sum.fields()...)
	}
	if w := d.deps.Pending.Warning(); w != "" {
		d.log.Warn(w+"; they are written as soon as there is room", zap.String("state_dir", d.cfg.StateDir))
	}
}

// repairFromLock fills in, from the project's lock, the process of a
// session whose record was unreadable and whose previous version is its
// first, starting record (no pid yet): the lock names the child the start
// spawned, with its start time and boot, which is what adoption proves
// the process by. A lock of another session, or none, changes nothing.
func repairFromLock(rec *ipc.Session, proj *state.Project, log *zap.Logger) {
	l, err := proj.ReadLock()
	if err != nil || l == nil || l.SessionID != rec.ID || l.ChildPID <= 0 || l.ChildStartTime == 0 || l.BootID == "" {
		return
	}
	rec.PID, rec.StartTime, rec.BootID = l.ChildPID, l.ChildStartTime, l.BootID
	rec.State = ipc.StateRunning
	log.Warn("the session's process is taken from its project's lock, its record unreadable", zap.String("session", rec.ID), zap.Int("pid", l.ChildPID))
}

// resumeRestarts gives the restart policy again to the sessions that had
// ended before this daemon, and whose successor an earlier daemon had
// scheduled and not started (it died or was stopped during the backoff):
// ends within their restart_window, with no successor. It returns how
// many it scheduled.
func (d *Service) resumeRestarts(ended []*session.Session) int {
	now := d.clock.Now()
	n := 0
	for _, s := range ended {
		rec := s.Snapshot()
		sp := s.Spec()
		if rec.EndedAt == nil || now.Sub(*rec.EndedAt) > sp.RestartWindow.Duration ||
			rec.Stop != nil && rec.Stop.Restart || d.reg.Successor(rec.ID) != "" {
			continue
		}
		exitKnown := rec.ExitCode != nil || rec.Signal != ""
		if dec := session.RestartDecision(sp, session.Reason(rec.EndReason), exitKnown, s.RestartHistory(), now); dec.Yes {
			d.restarts.Consider(s)
			n++
		}
	}
	return n
}

// recoverTimeout bounds the wait for the ends found at start: past it the
// daemon serves all the same, the ends still being written showing as
// stopping (a full disk: they land once there is room).
const recoverTimeout = 3 * time.Second

// recoverWorkers is how many recorded live sessions are taken over at
// once: a terminal holder is asked over its socket, which may not answer.
const recoverWorkers = 16

// recoverLive takes over the live sessions of the records, a few at a
// time, counts what was done with each, and returns those that are ending.
func (d *Service) recoverLive(live []*session.Session, sum *recoverySummary) []*session.Session {
	results := make([]session.Recovery, len(live))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(recoverWorkers, len(live)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// A terminal holder is asked over its socket: bounded.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				results[i] = live[i].Recover(ctx)
				cancel()
			}
		}()
	}
	for i := range live {
		next <- i
	}
	close(next)
	wg.Wait()
	var ending []*session.Session
	for i, r := range results {
		switch r {
		case session.Adopted:
			sum.adopted++
			continue
		case session.Finished:
			sum.finished++
		case session.Exited:
			sum.exited++
		default:
			sum.gone++
		}
		ending = append(ending, live[i])
	}
	return ending
}

// recoverySummary counts what a recovery did with the records.
type recoverySummary struct {
	records, unreadable, mismatched, unreachable int
	adopted, finished, exited, gone, pending     int
	queued                                       int
	swept                                        int
	// unstarted are the directories of starts that never got as far as
	// their record, removed.
	unstarted int
	// restarts are the restarts an earlier daemon scheduled and did not
	// start, scheduled again.
	restarts int
}

func (r recoverySummary) fields() []zap.Field {
	return []zap.Field{
		zap.Int("records", r.records),
		zap.Int("adopted", r.adopted),
		zap.Int("queued", r.queued),
		zap.Int("ended_process_gone", r.gone),
		zap.Int("ended_as_holder_recorded", r.exited),
		zap.Int("recorded_ends_finished", r.finished),
		zap.Int("ends_still_being_written", r.pending),
		zap.Int("projects_unreachable", r.unreachable),
		zap.Int("skipped_unreadable", r.unreadable),
		zap.Int("skipped_mismatched_id", r.mismatched),
		zap.Int("stray_processes_killed", r.swept),
		zap.Int("unstarted_removed", r.unstarted),
		zap.Int("restarts_resumed", r.restarts),
	}
}

// sweepOrphans kills processes of this daemon's sessions (known by the
// socket in their environment) that belong to no live session: a child
// spawned just before a crash, before its record said running, or a
// descendant that outlived its session while no daemon ran. A process
// that names a recorded session is killed only if it runs as that
// session's user; each is proven (proc.Process) as it is killed. It
// returns how many were.
func (d *Service) sweepOrphans(unreadable map[string]bool) int {
	n := 0
	for _, f := range proc.SessionsByEnv(d.cfg.Socket) {
		if unreadable[f.Session] {
			d.log.Warn("a process of a session whose record is unreadable is left running", zap.Int("pid", f.PID), zap.String("session", f.Session))
			continue
		}
		if s := d.reg.Get(f.Session); s != nil {
			if st := s.Snapshot().State; (ipc.Live(st) && st != ipc.StateStarting) || s.UID() != f.UID {
				continue
			}
		}
		d.log.Warn("killing a process of no live session", zap.Int("pid", f.PID), zap.String("session", f.Session))
		if f.Signal(syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// ownerCache looks each user up once for all the records of a recovery.
type ownerCache map[int]struct {
	owner *state.Owner
	err   error
}

func (c ownerCache) get(uid int) (*state.Owner, error) {
	if o, ok := c[uid]; ok {
		return o.owner, o.err
	}
	owner, err := access.Owner(uid)
	c[uid] = struct {
		owner *state.Owner
		err   error
	}{owner, err}
	return owner, err
}
