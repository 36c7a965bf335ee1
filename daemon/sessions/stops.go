package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
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
//
// Each intent is encoded once, when it is recorded: a write of the journal
// puts the encodings of those pending together, sorted by session as
// encoding/json sorts a map's keys, and the file is what encoding the map
// whole would make (stopsOnDisk, indented as every JSON file is). Encoding
// the whole map at each of the writes of a stop --all of a thousand, as it
// grew, was 3 % of the daemon's CPU over that stop, before its last
// signals (bench/README.md, "The twenty-seventh pass").
type stopJournal struct {
	path  string
	write func(path string, compact []byte) error // state.WriteCompactJSONReusing

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string][]byte // the intents by session, each encoded as a member: "id":{...}
	gen     uint64            // changes to pending
	written uint64            // the last gen on disk
	writing bool
}

// stopsOnDisk is StopsFile's content.
type stopsOnDisk struct {
	// Stops are the intents by session id.
	Stops map[string]ipc.StopIntent `json:"stops"`
}

func newStopJournal(path string) *stopJournal {
	j := &stopJournal{path: path, write: state.WriteCompactJSONReusing, pending: map[string][]byte{}}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// encodeIntent is the intent of session id's stop encoded as a member of
// the journal's map, its key and its value, compact.
func encodeIntent(id string, in ipc.StopIntent) ([]byte, error) {
	key, _ := json.Marshal(id) // a string always encodes
	v, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("record the stop of %s: %w", id, err)
	}
	return append(append(key, ':'), v...), nil
}

// Record puts the intent of the stop of session id on disk, with those of
// the other stops under way, and returns once it is there.
func (j *stopJournal) Record(id string, in ipc.StopIntent) error {
	enc, err := encodeIntent(id, in)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending[id] = enc
	j.gen++
	mine := j.gen
	for j.written < mine {
		if j.writing {
			j.cond.Wait()
			continue
		}
		j.writing = true
		gen, entries := j.gen, make([]journalEntry, 0, len(j.pending))
		for id, enc := range j.pending {
			entries = append(entries, journalEntry{id, enc})
		}
		j.mu.Unlock()
		err := j.write(j.path, journalJSON(entries))
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

// journalEntry is a session's id and its stop's intent encoded as a
// member (encodeIntent).
type journalEntry struct {
	id     string
	member []byte
}

// journalJSON is the compact encoding of stopsOnDisk whose Stops are the
// intents of entries: what json.Marshal makes of it, from the members'
// own encodings. It sorts entries.
func journalJSON(entries []journalEntry) []byte {
	slices.SortFunc(entries, func(a, b journalEntry) int { return strings.Compare(a.id, b.id) })
	n := len(`{"stops":{}}`)
	for _, e := range entries {
		n += len(e.member) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"stops":{`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.member...)
	}
	return append(b, "}}"...)
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
	enc, err := encodeIntent(id, in)
	if err != nil {
		return // it was decoded: it encodes
	}
	j.mu.Lock()
	j.pending[id] = enc
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
