package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestWriteJSONReusingSwapsTwoFiles: every write lands whole, the previous
// content waits in the spare, and rewrites take no new inodes: the file
// and its spare trade two of them.
func TestWriteJSONReusingSwapsTwoFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	inodes := map[uint64]bool{}
	for i := range 10 {
		// Shorter and longer in turn: a shorter write leaves nothing of
		// the longer one before it.
		v := map[string]any{"seq": i}
		if i%2 == 0 {
			v["pad"] = strings.Repeat("x", 100*i)
		}
		if err := WriteJSONReusing(path, v); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := ReadJSON(path, &got); err != nil || got["seq"] != float64(i) {
			t.Fatalf("write %d: read back %v, %v", i, got, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("write %d: mode %v, want 0600", i, fi.Mode().Perm())
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
		if i > 0 {
			var prev map[string]any
			data, err := os.ReadFile(filepath.Join(dir, ".session.json"+spareMark))
			if err != nil || json.Unmarshal(data, &prev) != nil || prev["seq"] != float64(i-1) {
				t.Errorf("write %d: the spare holds %q (%v), want the write before", i, data, err)
			}
		}
	}
	if runtime.GOOS == "linux" && len(inodes) > 2 {
		t.Errorf("10 writes used %d inodes, want the file and its spare trading two", len(inodes))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("the directory holds %d entries, want the file and its spare", len(ents))
	}
}

// TestWriteJSONReusingIgnoresAForeignSpare: a spare that is a symlink, a
// directory or a hard link is not written through; it is put out of the
// way and the write goes on.
func TestWriteJSONReusingIgnoresAForeignSpare(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(dir, ".session.json"+spareMark)
	for _, plant := range []func() error{
		func() error { return os.Symlink(outside, spare) },
		func() error { return os.Link(outside, spare) },
		// A FIFO with no reader: opened, it would block the write forever.
		func() error { return syscall.Mkfifo(spare, 0o600) },
	} {
		if err := WriteJSONReusing(path, map[string]int{"seq": 1}); err != nil {
			t.Fatal(err)
		}
		_ = os.RemoveAll(spare)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSONReusing(path, map[string]int{"seq": 2}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(outside); string(b) != "keep me\n" {
			t.Fatalf("written through a planted spare: %q", b)
		}
		var got map[string]int
		if err := ReadJSON(path, &got); err != nil || got["seq"] != 2 {
			t.Errorf("read back %v, %v", got, err)
		}
	}
}

// TestWriteJSONReusingIsAtomicForReaders: a reader never sees a partial or
// empty file while another goroutine rewrites it.
func TestWriteJSONReusingIsAtomicForReaders(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	big := make([]int, 5000)
	if err := WriteJSONReusing(path, map[string]any{"seq": 0, "pad": big}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i < 60; i++ {
			if err := WriteJSONReusing(path, map[string]any{"seq": i, "pad": big}); err != nil {
				t.Error(err)
				return
			}
		}
		close(done)
	}()
	for {
		select {
		case <-done:
			wg.Wait()
			return
		default:
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("a reader saw a partial file (%d bytes): %v", len(data), err)
		}
	}
}

// TestWriteRecordOneSyncAndTheNewerOfTwo: a record written over its spare
// is synced once, its exchange not; a crash of the machine that lost the
// exchange leaves the last write under the spare's name, and ReadRecord
// takes it, puts it back under the record's name and leaves the older as
// the spare the next write goes over.
func TestWriteRecordOneSyncAndTheNewerOfTwo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("records are exchanged with their spares on Linux only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	spare := filepath.Join(dir, SpareName("session.json"))
	write := func(id string, seq uint64) {
		t.Helper()
		if err := WriteRecord(path, recordSeq{ID: id, Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() recordSeq {
		t.Helper()
		var r recordSeq
		if err := ReadRecord(path, &r); err != nil {
			t.Fatalf("ReadRecord: %v", err)
		}
		return r
	}
	onDisk := func(p string) recordSeq {
		t.Helper()
		return recordIn(t, p)
	}
	// The first write makes the file, the second its spare: both name
	// new files and sync them.
	write("s1", 1)
	write("s1", 2)
	before := Syncs()
	write("s1", 3)
	if n := Syncs() - before; n != 1 {
		t.Errorf("a write over the spare made %d syncs, want 1", n)
	}
	// The exchange lost: the names as they were before the last write.
	if err := os.Rename(path, path+".x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(spare, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".x", spare); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Seq != 3 {
		t.Fatalf("ReadRecord after a lost exchange = seq %d, want the last write, 3", got.Seq)
	}
	if got := onDisk(path); got.Seq != 3 {
		t.Errorf("after ReadRecord the record's name holds seq %d, want 3 back in place", got.Seq)
	}
	write("s1", 4)
	if got, prev := onDisk(path), onDisk(spare); got.Seq != 4 || prev.Seq != 3 {
		t.Errorf("the write after: record seq %d, spare seq %d; want 4 over the older, 3 kept", got.Seq, prev.Seq)
	}
	// A spare that is no record, or another session's, or older, is not
	// taken.
	for _, c := range []struct {
		name, spare string
	}{
		{"cut short", `{"id": "s1", "seq": 9`},
		{"another session's", `{"id": "s2", "seq": 9}`},
		{"older", `{"id": "s1", "seq": 2}`},
		{"empty", ``},
	} {
		if err := os.WriteFile(spare, []byte(c.spare), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.Seq != 4 || got.ID != "s1" {
			t.Errorf("with a spare %s: ReadRecord = %+v, want the record, seq 4", c.name, got)
		}
	}
	// A record left empty (made ahead, never synced) with a whole spare:
	// the spare.
	if err := os.WriteFile(spare, []byte(`{"id": "s1", "seq": 5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Seq != 5 {
		t.Errorf("an empty record with a whole spare: ReadRecord = seq %d, want 5", got.Seq)
	}
	// Neither: ErrEmpty, and nothing moved.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spare, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var r recordSeq
	if err := ReadRecord(path, &r); !errors.Is(err, ErrEmpty) {
		t.Errorf("an empty record and spare: %v, want ErrEmpty", err)
	}
}

// TestWriteRecordCompact: the record goes to disk as WriteRecord writes it,
// its previous version to the spare, and what comes back is json.Marshal's
// encoding of it, the caller's to keep.
func TestWriteRecordCompact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	rec := fullRecord()
	if err := WriteRecord(path, map[string]int{"seq": 6}); err != nil {
		t.Fatal(err)
	}
	got, err := WriteRecordCompact(path, rec)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(rec)
	if string(got) != string(want) {
		t.Errorf("returned:\n%s\nwant json.Marshal's:\n%s", got, want)
	}
	indented, _ := json.MarshalIndent(rec, "", jsonIndent)
	if data, err := os.ReadFile(path); err != nil || string(data) != string(indented)+"\n" {
		t.Errorf("on disk (%v):\n%s\nwant:\n%s", err, data, indented)
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".session.json"+spareMark)); err != nil || !strings.Contains(string(data), `"seq": 6`) {
		t.Errorf("the spare holds %q (%v), want the write before", data, err)
	}
	// The next encoding reuses the encoder's buffers: what was returned
	// stays as it was.
	kept := string(got)
	if _, err := WriteRecordCompact(path, map[string]string{"other": strings.Repeat("y", len(got))}); err != nil {
		t.Fatal(err)
	}
	if string(got) != kept {
		t.Error("the returned encoding changed with the next write")
	}
	if _, err := WriteRecordCompact(path, func() {}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a value JSON cannot encode: %v, want an error naming the file", err)
	}
}

// recordIn reads the recordSeq in the file p.
func recordIn(t *testing.T, p string) recordSeq {
	t.Helper()
	var r recordSeq
	data, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		t.Fatalf("%s: %v (%q)", p, err, data)
	}
	return r
}

// TestRecoverRecordKeepsABrokenRecordAside: a record that is none (not
// JSON, null, a directory) beside a spare that is one gives the spare,
// which takes the name, and the broken one is kept as .corrupt-<time>,
// said so, never written over.
func TestRecoverRecordKeepsABrokenRecordAside(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"garbage":     func(p string) error { return os.WriteFile(p, []byte("garbage\n"), 0o600) },
		"null":        func(p string) error { return os.WriteFile(p, []byte("null\n"), 0o600) },
		"a directory": func(p string) error { return os.Mkdir(p, 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "session.json")
			good := `{"id": "abc", "seq": 3, "state": "running"}`
			if err := os.WriteFile(filepath.Join(dir, SpareName("session.json")), []byte(good), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := plant(path); err != nil {
				t.Fatal(err)
			}
			var rec struct {
				ID    string `json:"id"`
				State string `json:"state"`
			}
			aside, err := RecoverRecord(path, &rec)
			if err != nil || rec.ID != "abc" || rec.State != "running" {
				t.Fatalf("RecoverRecord = %+v, %v; want the spare's record", rec, err)
			}
			var ce *CorruptError
			if !errors.As(aside, &ce) || ce.MoveErr != nil || !strings.Contains(aside.Error(), path) {
				t.Errorf("aside = %v, want a CorruptError naming %s, kept aside", aside, path)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != good {
				t.Errorf("%s now holds %q, %v; want the spare's record", path, b, err)
			}
			kept, _ := filepath.Glob(path + ".corrupt-*")
			if len(kept) != 1 {
				t.Errorf("kept aside: %v, want one %s.corrupt-*", kept, path)
			}
		})
	}
}
