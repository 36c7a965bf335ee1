package sessions

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"sync"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// StopsFile is the name, in the state dir, of the stops under way.
const StopsFile = "stops.json"

// stopJournal keeps the intents of the stops under way in one file
// (StopsFile): a stop's intent is on disk before its first signal, so that
// a daemon that dies during the grace leaves the next one to finish the
// stop, as the end it is. The session's own record says so once it is next
// written (at the end); written for each stop it made a thousand records
// for a stop --all of a thousand, some 10 % of its time (bench/README.md,
// "The twenty-second pass"). The journal's writes are shared: the stops
// asked while one is written wait for the next, which carries them all.
//
// An intent leaves the journal once the session's record carries it
// (Done); the file keeps it until its next write, and recovery applies an
// intent only to a record that is still running.
type stopJournal struct {
	path  string
	write func(path string, v any) error // state.WriteJSONReusing

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]ipc.StopIntent
	gen     uint64 // changes to pending
	written uint64 // the last gen on disk
	writing bool
}

// stopsOnDisk is StopsFile's content.
type stopsOnDisk struct {
	// Stops are the intents by session id.
	Stops map[string]ipc.StopIntent `json:"stops"`
}

func newStopJournal(path string) *stopJournal {
	j := &stopJournal{path: path, write: state.WriteJSONReusing, pending: map[string]ipc.StopIntent{}}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// Record puts the intent of the stop of session id on disk, with those of
// the other stops under way, and returns once it is there.
func (j *stopJournal) Record(id string, in ipc.StopIntent) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending[id] = in
	j.gen++
	mine := j.gen
	for j.written < mine {
		if j.writing {
			j.cond.Wait()
			continue
		}
		j.writing = true
		gen, snap := j.gen, maps.Clone(j.pending)
		j.mu.Unlock()
		err := j.write(j.path, stopsOnDisk{Stops: snap})
		j.mu.Lock()
		j.writing = false
		j.cond.Broadcast()
		if err != nil {
			return fmt.Errorf("record the stop: %w", err)
		}
		j.written = max(j.written, gen)
	}
	return nil
}

// Done says that the record of session id carries its stop: the journal's
// next write leaves it out.
func (j *stopJournal) Done(id string) {
	j.mu.Lock()
	delete(j.pending, id)
	j.mu.Unlock()
}

// load returns the intents an earlier daemon left; those recovery applies
// are kept (adopt) until the sessions' records carry them, so that a write
// of the journal before then does not drop them.
func (j *stopJournal) load() (map[string]ipc.StopIntent, error) {
	var f stopsOnDisk
	if err := state.ReadJSON(j.path, &f); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return f.Stops, nil
}

// adopt keeps the intent of session id that an earlier daemon wrote.
func (j *stopJournal) adopt(id string, in ipc.StopIntent) {
	j.mu.Lock()
	j.pending[id] = in
	j.mu.Unlock()
}

// applyStop lays the intent of a stop an earlier daemon began over the
// record of a session that it left running: the session recovers as
// stopping, as if its record had said so.
func applyStop(rec *ipc.Session, in ipc.StopIntent) bool {
	if rec.State != ipc.StateRunning && rec.State != ipc.StateWarned {
		return false
	}
	rec.State = ipc.StateStopping
	rec.EndReason = in.Reason
	rec.Stop = &in
	return true
}
