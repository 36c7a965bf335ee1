package sessions

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
	"go.uber.org/zap"
)

// historyTrimmer drops the oldest ended sessions beyond history_limit off
// the path of the ends: an end arms one pass for trimDelay later, and each
// end until then puts it off again, up to trimMaxDelay after the first. A
// burst of ends (stop --all of a thousand) is then one pass after it,
// rather than a count of the ended sessions, a sort of them and a removal
// at each end, and nobody's stop waits for it. The pass counts first, and
// does nothing more under the limit.
type historyTrimmer struct {
	clock   session.Clock
	mu      sync.Mutex
	t       session.Timer
	armedAt time.Time // zero: no pass armed
	// pass serializes passes (a recovery's and a timer's).
	pass sync.Mutex
}

const (
	trimDelay    = time.Second
	trimMaxDelay = 10 * time.Second
)

func (d *Service) trimSoon() {
	if d.cfg.HistoryLimit <= 0 {
		return
	}
	tr := &d.trim
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := tr.clock.Now()
	switch {
	case tr.armedAt.IsZero():
		tr.armedAt = now
	case now.Sub(tr.armedAt) >= trimMaxDelay-trimDelay:
		return
	}
	if tr.t != nil {
		tr.t.Stop()
	}
	tr.t = tr.clock.AfterFunc(trimDelay, d.trimPass)
}

func (d *Service) trimPass() {
	d.trim.mu.Lock()
	d.trim.armedAt = time.Time{}
	d.trim.mu.Unlock()
	if !d.closing.Load() {
		d.trimHistory()
	}
}

// trimHistory drops the oldest ended sessions beyond history_limit.
func (d *Service) trimHistory() {
	d.trim.pass.Lock()
	defer d.trim.pass.Unlock()
	limit := d.cfg.HistoryLimit
	if limit <= 0 {
		return
	}
	if d.reg.Ended() <= limit {
		return // the common case, without sorting every session at every end
	}
	var ended []*session.Session
	for _, s := range d.reg.All() {
		if !ipc.Live(s.State()) {
			ended = append(ended, s)
		}
	}
	for i := 0; i < len(ended)-limit; i++ {
		if err := d.remove(ended[i]); err != nil {
			d.log.Warn("remove old session", zap.Error(err))
		}
	}
}

// RecordWriter writes session records into the state dir, and makes the
// sessions' directories there, from Spares when it is set.
type RecordWriter struct {
	StateDir string
	Spares   *state.SpareDirs
}

// SessionFiles are the files every session's directory has from its
// start, which a spare directory holds empty (state.SpareDirs): the
// record and its spare, the environment, the log and its stamps' next
// version, and the spare its handoff's archive is written into at its
// end.
func SessionFiles() []string {
	return []string{"session.json", state.SpareName("session.json"), session.EnvironFile, "output.log", "output.log" + logfile.StampSuffix + ".tmp",
		state.SpareName(state.HandoffFile)}
}

// MakeDir makes a session's directory: a spare renamed into place where
// there is one (state.SpareDirs.Make).
func (w *RecordWriter) MakeDir(dir string) (synced func() error, err error) {
	if w.Spares != nil && filepath.Dir(dir) == filepath.Join(w.StateDir, "sessions") {
		return w.Spares.Make(filepath.Base(dir))
	}
	return func() error { return nil }, state.EnsureDir(dir)
}

// WriteRecord writes a session's record durably, with one sync
// (state.WriteRecord: the content, the record and its spare standing for
// each other after a crash of the machine), except while a new session
// starts. Its first record (Seq 1, starting) has its sync deferred
// (state.WriteRecordDeferred): it runs while the start goes on (the
// project's files, the command's spawn), and the next write, the record
// of the running command (Seq 2), waits for it, so that the start's
// answer, which follows that write, finds the session on disk. After a
// crash of the machine there is the starting record at least, whose boot
// is over: the session ends as the host's going down ended its command,
// with its handoff; the pid the running record adds is of use only to a
// daemon that crashed alone, which finds the record written. The running
// record's sync is shared with those of the other starts about then
// (state.WriteRecordLazily), and the record's next write waits for it. A
// queued session's starting record (a later one) has its content synced,
// so that the record it replaces, which may have been answered, is there
// or it is. The later records of a running session (a report, the agent's
// state, an extension, the warning) have their sync deferred too: a crash
// of the machine ends the session all the same, and loses at most what
// changed in the last write, whose content a daemon that crashed alone
// finds written; the write that ends the session waits for that sync.
func (w *RecordWriter) WriteRecord(rec *ipc.Session) error {
	return recordWrite(rec)(filepath.Join(w.StateDir, "sessions", rec.ID, "session.json"), rec)
}

// recordWrite is the write of rec that WriteRecord makes.
func recordWrite(rec *ipc.Session) func(path string, v any) error {
	switch {
	case rec.State == ipc.StateStarting && rec.Seq == 1:
		return state.WriteRecordDeferred
	case rec.State == ipc.StateRunning && rec.Seq == 2:
		return state.WriteRecordLazily
	case rec.State == ipc.StateRunning || rec.State == ipc.StateWarned:
		return state.WriteRecordDeferred
	case rec.State == ipc.StateStarting:
		return state.WriteJSONReusingUnsynced
	}
	return state.WriteRecord
}

// WriteRecordJSON is WriteRecord for a record of a session that is not
// starting, and returns the record's compact encoding, for the event that
// carries it (session.RecordJSONWriter).
func (w *RecordWriter) WriteRecordJSON(rec *ipc.Session) (json.RawMessage, error) {
	if rec.State == ipc.StateStarting {
		return nil, w.WriteRecord(rec)
	}
	return state.WriteRecordCompact(filepath.Join(w.StateDir, "sessions", rec.ID, "session.json"), rec)
}
