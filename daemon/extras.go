package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// extras holds what sessions share besides the registry: the project
// watcher hub, the checkpointer and the checkpoint scheduler.
type extras struct {
	d     *Daemon
	hub   *watch.Hub
	ckpt  *checkpoint.Checkpointer
	cron  *cron.Cron
	clog  cron.Logger
	mu    sync.Mutex
	items map[string]*sessionExtras
	// bySize are checkpointers for specs whose checkpoint_max_file differs
	// from the daemon's default (rare; git's own locking and the
	// compare-and-swap of update-ref keep two of them safe on one repo).
	bySize map[int64]*checkpoint.Checkpointer
}

// checkpointer returns the checkpointer for a spec's checkpoint_max_file.
func (e *extras) checkpointer(maxFile config.Size) *checkpoint.Checkpointer {
	if maxFile <= 0 || maxFile == e.d.cfg.Defaults.CheckpointMaxFile {
		return e.ckpt
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.bySize[int64(maxFile)]
	if c == nil {
		c = checkpoint.New(checkpoint.Options{StateDir: e.d.cfg.StateDir, MaxFileSize: int64(maxFile), Log: e.d.log.Named("checkpoint")})
		e.bySize[int64(maxFile)] = c
	}
	return c
}

// sessionExtras is a live session's watch and checkpoint schedule.
type sessionExtras struct {
	watch     *watch.Watch
	entry     cron.EntryID
	scheduled bool
	// lastCheckpoint is when the last checkpoint was taken (or the start).
	lastCheckpoint time.Time
	lastActivityEv time.Time
}

// activityEvery rate-limits the activity event of one session.
const activityEvery = 5 * time.Second

func newExtras(d *Daemon) (*extras, error) {
	hub, err := watch.NewHub(d.log.Named("watch"))
	if err != nil {
		return nil, fmt.Errorf("start project watcher: %w", err)
	}
	clog := cronLogger{d.log.Named("cron")}
	e := &extras{
		d: d, hub: hub, clog: clog, items: map[string]*sessionExtras{}, bySize: map[int64]*checkpoint.Checkpointer{},
		ckpt: checkpoint.New(checkpoint.Options{
			StateDir: d.cfg.StateDir, MaxFileSize: int64(d.cfg.Defaults.CheckpointMaxFile),
			Log: d.log.Named("checkpoint"),
		}),
		cron: cron.New(cron.WithParser(config.CronParser), cron.WithChain(cron.Recover(clog)), cron.WithLogger(clog)),
	}
	e.cron.Start()
	return e, nil
}

// close stops the scheduler (waiting for running jobs) and the watcher.
func (e *extras) close() {
	<-e.cron.Stop().Done()
	_ = e.hub.Close()
}

func (e *extras) get(id string) *sessionExtras {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.items[id]
}

// startWatch watches the project before the command starts, so that no
// change the command makes goes unseen.
func (s *session) startWatch() {
	e := s.d.ext
	x := &sessionExtras{lastCheckpoint: s.startedAt}
	w, err := e.hub.Watch(s.projectDir, watch.Options{
		Ignore:     s.spec.Watch.Ignore,
		OnActivity: func(a watch.Activity) { s.onActivity(a) },
	})
	if err != nil {
		s.log.Warn("project not watched: idle detection sees output only, checkpoints run on every schedule tick", zap.Error(err))
	} else {
		x.watch = w
	}
	e.mu.Lock()
	e.items[s.id] = x
	e.mu.Unlock()
}

// stopWatch drops the watch of a session that did not start.
func (s *session) stopWatch() {
	e := s.d.ext
	e.mu.Lock()
	x := e.items[s.id]
	delete(e.items, s.id)
	e.mu.Unlock()
	if x != nil && x.watch != nil {
		_ = x.watch.Close()
	}
}

// afterSpawn starts what runs beside a live session: its lock and its
// checkpoint schedule (and its watch, for an adopted session).
func (s *session) afterSpawn() {
	s.writeLock()
	e := s.d.ext
	if e.get(s.id) == nil {
		s.startWatch()
	}
	x := e.get(s.id)
	if s.spec.Checkpoint == "" {
		return
	}
	sched, err := config.ParseSchedule(s.spec.Checkpoint)
	if err != nil {
		s.log.Warn("checkpoint schedule", zap.Error(err))
		return
	}
	job := cron.NewChain(cron.SkipIfStillRunning(e.clog)).Then(cron.FuncJob(func() { s.scheduledCheckpoint() }))
	entry := e.cron.Schedule(sched, job)
	e.mu.Lock()
	x.entry, x.scheduled = entry, true
	e.mu.Unlock()
}

func (s *session) onActivity(a watch.Activity) {
	x := s.d.ext.get(s.id)
	if x == nil {
		return
	}
	s.d.ext.mu.Lock()
	emit := a.Time.Sub(x.lastActivityEv) >= activityEvery
	if emit {
		x.lastActivityEv = a.Time
	}
	s.d.ext.mu.Unlock()
	if emit {
		s.emit(ipc.EventActivity, "edited "+a.Path, map[string]any{"path": a.Path})
	}
}

// fileActivity is the last change the watcher saw in the project.
func (s *session) fileActivity() time.Time {
	if x := s.d.ext.get(s.id); x != nil && x.watch != nil {
		return x.watch.Stats().LastActivity
	}
	return time.Time{}
}

// decorate fills a live record's watcher fields.
func (e *extras) decorate(s *session, rec *ipc.Session) {
	x := e.get(s.id)
	if x == nil || x.watch == nil || !ipc.Live(rec.State) {
		return
	}
	applyStats(rec, x.watch.Stats())
}

func applyStats(rec *ipc.Session, st watch.Stats) {
	rec.FilesChanged = st.FilesChanged
	if rec.FilesChanged == nil {
		rec.FilesChanged = []string{}
	}
	rec.FilesChangedMore = st.FilesChangedMore
	if st.LastFileEdited != "" {
		rec.LastFileEdited = st.LastFileEdited
	}
	if !st.LastActivity.IsZero() && (rec.LastActivity == nil || st.LastActivity.After(*rec.LastActivity)) {
		t := st.LastActivity
		rec.LastActivity = &t
	}
}

// scheduledCheckpoint is the cron job: a checkpoint only when the watcher
// saw a change since the last one.
func (s *session) scheduledCheckpoint() {
	x := s.d.ext.get(s.id)
	if x == nil {
		return
	}
	if x.watch != nil && !x.watch.ChangedSince(x.lastCheckpoint) {
		return
	}
	_, _ = s.checkpoint("scheduled")
}

// checkpoint takes a checkpoint now; a failure is an event and a warning in
// the record, never fatal.
func (s *session) checkpoint(why string) (checkpoint.Result, error) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), checkpoint.DefaultTimeout)
	defer cancel()
	mode := checkpoint.Mode(s.spec.CheckpointMode)
	msg := fmt.Sprintf("sessiond %s checkpoint of session %s", why, s.id)
	res, err := s.d.ext.checkpointer(s.spec.CheckpointMaxFile).Take(ctx, s.projectDir, s.id, mode, msg)
	if err != nil {
		err = errors.New(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
		s.update(func(r *ipc.Session) {
			r.Warnings = appendBounded(r.Warnings, fmt.Sprintf("%s checkpoint failed at %s: %v", why, started.Format(time.RFC3339), err), 20)
		})
		s.emit(ipc.EventCheckpoint, "checkpoint failed: "+err.Error(), map[string]any{"error": err.Error()})
		s.log.Warn("checkpoint failed", zap.Error(err))
		return res, err
	}
	if x := s.d.ext.get(s.id); x != nil {
		s.d.ext.mu.Lock()
		x.lastCheckpoint = started
		s.d.ext.mu.Unlock()
	}
	if res.Skipped {
		return res, nil
	}
	var st *watch.Stats
	if x := s.d.ext.get(s.id); x != nil && x.watch != nil {
		v := x.watch.Stats()
		st = &v
	}
	s.update(func(r *ipc.Session) {
		// The watcher's findings go to disk with each checkpoint, so that
		// a crash does not lose them all.
		if st != nil {
			applyStats(r, *st)
		}
		r.Checkpoints++
		r.LastCheckpoint = res.ID
		for _, p := range res.LeftOut {
			r.Warnings = appendBounded(r.Warnings, "left out of checkpoints (too large or a dependency directory): "+p, 20)
		}
	})
	s.emit(ipc.EventCheckpoint, fmt.Sprintf("checkpoint %.12s: %s changed", res.ID, plural(res.FilesChanged, "file")), res)
	return res, nil
}

func appendBounded(list []string, v string, max int) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	if len(list) >= max {
		return list
	}
	return append(list, v)
}

// finishWork runs at a session's end, before its files are written: the
// schedule stops, a final checkpoint is taken if anything changed, the
// watcher's findings go into the record.
func (s *session) finishWork(now time.Time) {
	e := s.d.ext
	x := e.get(s.id)
	if x == nil {
		return
	}
	if x.scheduled {
		e.cron.Remove(x.entry)
	}
	changed := x.watch == nil || x.watch.ChangedSince(x.lastCheckpoint)
	if s.spec.Checkpoint != "" && changed {
		_, _ = s.checkpoint("final")
	}
	if x.watch != nil {
		_ = x.watch.Close()
		st := x.watch.Stats()
		s.set(func(r *ipc.Session) { applyStats(r, st) })
	}
	e.mu.Lock()
	delete(e.items, s.id)
	e.mu.Unlock()
}

// recoverLive handles a session recorded as live by an earlier daemon: a
// process still alive (same pid, start time and boot) is adopted; one that
// is gone ended unobserved and is ended as crashed.
func (d *Daemon) recoverLive(s *session) {
	rec := s.rec
	alive := rec.PID > 0 && rec.BootID == d.bootID && proc.Alive(rec.PID, rec.StartTime)
	if alive {
		child, err := proc.Adopt(rec.PID, rec.StartTime)
		if err == nil {
			s.child = child
			s.adopted = true
			d.watchOutput(s)
			s.update(func(r *ipc.Session) {
				r.Warnings = appendBounded(r.Warnings, "adopted after a daemon restart: the exit status will be unknown", 20)
			})
			s.log.Info("adopted live session", zap.Int("pid", rec.PID))
			d.wg.Add(1)
			go s.run()
			return
		}
		s.log.Warn("cannot adopt live session; killing it", zap.Error(err))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		proc.KillSession(ctx, s.id, rec.PID, false)
		cancel()
	}
	s.child = proc.Gone(rec.PID)
	s.update(func(r *ipc.Session) {
		r.Warnings = appendBounded(r.Warnings, "the daemon restarted and found the session's process gone: its end was not observed", 20)
	})
	d.ext.mu.Lock()
	d.ext.items[s.id] = &sessionExtras{lastCheckpoint: rec.StartedAt}
	d.ext.mu.Unlock()
	s.end(ipc.EndCrashed, proc.Exit{Code: -1}, false)
}

// cronLogger adapts zap to cron's logger.
type cronLogger struct{ log *zap.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug(msg, zap.Any("details", kv))
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error(msg, zap.Error(err), zap.Any("details", kv))
}
