package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// TestStopJournalSharesItsWrites: stops asked while the journal is being
// written wait for its next write, which carries them all; each returns
// once its intent is on disk.
func TestStopJournalSharesItsWrites(t *testing.T) {
	j := newStopJournal(filepath.Join(t.TempDir(), StopsFile))
	var mu sync.Mutex
	var writes []int
	first := make(chan struct{})
	j.write = func(path string, compact []byte) error {
		var f stopsOnDisk
		if err := json.Unmarshal(compact, &f); err != nil {
			return err
		}
		mu.Lock()
		n := len(writes)
		writes = append(writes, len(f.Stops))
		mu.Unlock()
		if n == 0 {
			<-first
		}
		return state.WriteCompactJSONReusing(path, compact)
	}
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- j.Record(fmt.Sprintf("s%02d", i), ipc.StopIntent{Reason: "interrupted", GraceMS: 30000, By: 1000})
		}()
	}
	// The first write is under way; the others queue behind it.
	waitUntil(t, func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.gen == n
	})
	close(first)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(writes) != 2 || writes[0] != 1 || writes[1] != n {
		t.Errorf("the journal's writes carried %v intents, want [1 %d]: one write for the stops that waited", writes, n)
	}
	got, err := j.load()
	if err != nil || len(got) != n || got["s07"].GraceMS != 30000 || got["s07"].By != 1000 {
		t.Errorf("the journal on disk: %d intents (%v), s07 %+v", len(got), err, got["s07"])
	}
}

// TestStopJournalLeavesOutWhatRecordsCarry: an intent that the session's
// record carries (Done) is left out of the journal's next write; one that
// an earlier daemon wrote and this one applied (adopt) is kept until then.
func TestStopJournalLeavesOutWhatRecordsCarry(t *testing.T) {
	path := filepath.Join(t.TempDir(), StopsFile)
	j := newStopJournal(path)
	for _, id := range []string{"a", "b"} {
		if err := j.Record(id, ipc.StopIntent{Reason: "interrupted"}); err != nil {
			t.Fatal(err)
		}
	}
	j2 := newStopJournal(path)
	found, err := j2.load()
	if err != nil || len(found) != 2 {
		t.Fatalf("the next daemon found %v (%v), want a and b", found, err)
	}
	j2.adopt("a", found["a"])
	j2.adopt("b", found["b"])
	j2.Done("a")
	if err := j2.Record("c", ipc.StopIntent{Reason: "deadline"}); err != nil {
		t.Fatal(err)
	}
	got, err := j2.load()
	if _, ok := got["a"]; ok || len(got) != 2 || got["b"].Reason != "interrupted" || got["c"].Reason != "deadline" {
		t.Errorf("the journal holds %v (%v), want b and c", got, err)
	}
}

// TestStopJournalFileIsTheMapEncoded: the journal is written from the
// intents' own encodings, each made once, and the file is byte for byte
// what encoding the map of intents whole makes, indented as every JSON
// file is: the same keys in the same order, the same escapes.
func TestStopJournalFileIsTheMapEncoded(t *testing.T) {
	path := filepath.Join(t.TempDir(), StopsFile)
	j := newStopJournal(path)
	at := time.Date(2026, 12, 7, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	want := map[string]ipc.StopIntent{}
	check := func(step string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := json.MarshalIndent(stopsOnDisk{Stops: want}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if exp = append(exp, '\n'); !bytes.Equal(got, exp) {
			t.Fatalf("%s: the journal holds\n%s\nwant what encoding the map makes:\n%s", step, got, exp)
		}
	}
	for i, id := range []string{"zz9", "a<b>&c", "0\u00e9\"q\\", "m", "B", "a"} {
		in := ipc.StopIntent{At: at.Add(time.Duration(i) * time.Second), Reason: fmt.Sprintf("reason %d <\u2028> \"%s\"", i, id),
			GraceMS: int64(i) * 1500, By: 1000 - i, Restart: i%2 == 1}
		if err := j.Record(id, in); err != nil {
			t.Fatal(err)
		}
		want[id] = in
		check(fmt.Sprintf("after %d stops", i+1))
	}
	j.Done("m")
	delete(want, "m")
	j.adopt("q", ipc.StopIntent{Reason: "adopted", At: at})
	want["q"] = ipc.StopIntent{Reason: "adopted", At: at}
	if err := j.Record("r", ipc.StopIntent{Reason: "deadline"}); err != nil {
		t.Fatal(err)
	}
	want["r"] = ipc.StopIntent{Reason: "deadline"}
	check("after a done, an adopted and one more")
	for id := range want {
		j.Done(id)
	}
	want = map[string]ipc.StopIntent{"y": {}}
	if err := j.Record("y", ipc.StopIntent{}); err != nil {
		t.Fatal(err)
	}
	check("after all were done")
}

// TestStopJournalWriteFails: a stop whose intent cannot be written is told.
func TestStopJournalWriteFails(t *testing.T) {
	j := newStopJournal(filepath.Join(t.TempDir(), StopsFile))
	j.write = func(string, []byte) error { return errors.New("no space left on device") }
	if err := j.Record("a", ipc.StopIntent{}); err == nil {
		t.Error("Record succeeded though the journal could not be written")
	}
}

// TestApplyStop: an intent an earlier daemon wrote makes a running (or
// warned) record stopping, with its reason and intent; a record that says
// more already is left as it is.
func TestApplyStop(t *testing.T) {
	in := ipc.StopIntent{Reason: "interrupted", GraceMS: 5000, By: 1000, Restart: true}
	for _, st := range []string{ipc.StateRunning, ipc.StateWarned} {
		rec := ipc.Session{State: st}
		if !applyStop(&rec, in) || rec.State != ipc.StateStopping || rec.EndReason != "interrupted" || rec.Stop == nil || !rec.Stop.Restart {
			t.Errorf("a %s record with a stop recorded: %+v", st, rec)
		}
	}
	for _, st := range []string{ipc.StateStopping, ipc.StateEnded, ipc.StateStarting, ipc.StateQueued} {
		rec := ipc.Session{State: st, EndReason: "completed"}
		if applyStop(&rec, in) || rec.State != st || rec.EndReason != "completed" {
			t.Errorf("a %s record took a stop recorded for it: %+v", st, rec)
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStopJournalCorrupt: a journal that is not one is an error naming it,
// and is moved aside, not read as no stops nor written over.
func TestStopJournalCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StopsFile)
	if err := os.WriteFile(path, []byte(`{"stops": {"a": {"at": 12`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := newStopJournal(path).load()
	var corrupt *state.CorruptError
	if !errors.As(err, &corrupt) || got != nil || !strings.Contains(err.Error(), StopsFile) {
		t.Fatalf("load of a torn journal: %v, %v; want a corrupt error naming it", got, err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Errorf("the torn journal was not moved aside: %v", aside)
	} else if b, _ := os.ReadFile(aside[0]); !strings.HasPrefix(string(b), `{"stops"`) {
		t.Errorf("what was moved aside holds %q", b)
	}
}

// FuzzStopJournalEncoding: whatever the sessions' ids and their intents,
// the journal the intents' own encodings make up is byte for byte what
// encoding/json makes of the map (its key order, its escapes, invalid
// UTF-8 included), so that the file reads back as the map it stands for.
func FuzzStopJournalEncoding(f *testing.F) {
	f.Add("a\x00b\x00zz9", "reason", int64(1500), 1000, true, int64(1733572800123456789))
	f.Add("a<b>&c\x000\u00e9\"q\\\x00B", "<\u2028> \"x\"", int64(0), -1, false, int64(0))
	f.Add("\xff\xfe\x00\xff\x00", "\x80", int64(-5), 0, true, int64(-62135596800000000))
	f.Add("", "", int64(0), 0, false, int64(1))
	f.Fuzz(func(t *testing.T, ids, reason string, grace int64, by int, restart bool, nanos int64) {
		want := map[string]ipc.StopIntent{}
		var entries []journalEntry
		for i, id := range strings.Split(ids, "\x00") {
			in := ipc.StopIntent{At: time.Unix(0, nanos+int64(i)).In(time.FixedZone("Z", i*1800)), Reason: reason + id,
				GraceMS: grace + int64(i), By: by - i, Restart: restart != (i%2 == 1)}
			member, err := encodeIntent(id, in)
			if _, merr := json.Marshal(in); (err == nil) != (merr == nil) {
				t.Fatalf("encodeIntent's error %v, encoding/json's %v", err, merr)
			}
			if err != nil {
				return // a time encoding/json refuses: no intent is recorded
			}
			if _, dup := want[id]; dup {
				// The journal keeps the last intent of a session.
				entries = slices.DeleteFunc(entries, func(e journalEntry) bool { return e.id == id })
			}
			want[id] = in
			entries = append(entries, journalEntry{id, member})
		}
		exp, err := json.Marshal(stopsOnDisk{Stops: want})
		if err != nil {
			t.Fatal(err)
		}
		if got := journalJSON(entries); !bytes.Equal(got, exp) {
			t.Fatalf("the journal\n%q\nwant what encoding the map makes\n%q", got, exp)
		}
	})
}
