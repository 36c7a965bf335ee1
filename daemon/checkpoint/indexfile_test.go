package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// indexRepo makes a repository whose index, in the given version, has long
// and unicode names, an executable, a symlink, an intent-to-add entry
// (extended flags) and a gitlink.
func indexRepo(t testing.TB, version string) (dir, index string) {
	dir = t.TempDir()
	gitT(t, dir, "init", "-q")
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "dir/ünïcode", "u\n")
	write(t, dir, "run.sh", "#!/bin/sh\n")
	must(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	must(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	gitT(t, dir, "add", "-A")
	write(t, dir, "later.txt", "intent\n")
	gitT(t, dir, "add", "-N", "later.txt")
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,sub")
	// A path over the 0xfff bytes of the name length field (an index entry
	// only: no file system takes it).
	long := "dir/" + strings.Repeat(strings.Repeat("n", 200)+"/", 22) + "f"
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+gitT(t, dir, "rev-parse", ":a.txt")+","+long)
	gitT(t, dir, "update-index", "--index-version", version)
	return dir, filepath.Join(dir, ".git", "index")
}

// The reader sees what git sees in every index version, and an index the
// writer makes of the entries git reads back the same.
func TestIndexRoundTrip(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir, index := indexRepo(t, version)
			want := gitT(t, dir, "ls-files", "-s", "--debug")
			ix, err := openIndex(index, 20, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.close()
			var got []string
			w := newIndexWriter(20)
			if err := ix.scan(func(e *indexEntry) bool {
				got = append(got, e.path())
				w.add(e)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if names := gitT(t, dir, "-c", "core.quotePath=false", "ls-files"); strings.Join(got, "\n") != names {
				t.Errorf("paths read:\n%s\nwant\n%s", strings.Join(got, "\n"), names)
			}
			copy := filepath.Join(t.TempDir(), "index")
			must(t, os.WriteFile(copy, w.bytes(), 0o600))
			back, err := gitE(dir, []string{"GIT_INDEX_FILE=" + copy}, "ls-files", "-s", "--debug")
			if err != nil {
				t.Fatal(err)
			}
			if back != want {
				t.Errorf("git reads the written index as\n%s\nwant\n%s", back, want)
			}
			if _, err := gitE(dir, []string{"GIT_INDEX_FILE=" + copy}, "status", "--porcelain"); err != nil {
				t.Errorf("git status on the written index: %v", err)
			}
		})
	}
}

func TestIndexUnsupported(t *testing.T) {
	dir, index := indexRepo(t, "2")
	gitT(t, dir, "update-index", "--split-index")
	ix, err := openIndex(index, 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	if err := ix.scan(func(*indexEntry) bool { return true }); err == nil {
		t.Error("a split index was read without error")
	}
	garbage := filepath.Join(t.TempDir(), "index")
	must(t, os.WriteFile(garbage, []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05 not really"+strings.Repeat("\x00", 40)), 0o600))
	if ix, err := openIndex(garbage, 20, nil); err == nil {
		err = ix.scan(func(*indexEntry) bool { return true })
		ix.close()
		if err == nil {
			t.Error("garbage read as an index")
		}
	}
}

// FuzzIndexScan feeds the index reader arbitrary bytes: it must return an
// error or entries, never panic or read out of bounds.
func FuzzIndexScan(f *testing.F) {
	for _, v := range []string{"2", "3", "4"} {
		_, index := indexRepo(f, v)
		b, err := os.ReadFile(index)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 12+20 {
			return
		}
		ix := &indexFile{data: data, hashLen: 20}
		if ix.header() != nil {
			return
		}
		_ = ix.scan(func(e *indexEntry) bool {
			_, _, _, _ = e.path(), e.mode(), e.oid(), e.stage()
			return true
		})
	})
}

// FuzzParseTree feeds the tree parser arbitrary bytes; what it accepts
// encodes back to the same bytes when git's order holds.
func FuzzParseTree(f *testing.F) {
	f.Add(encodeTree([]treeEntry{
		{name: "a", mode: modeFile, oid: make([]byte, 20)},
		{name: "d", mode: modeDir, oid: make([]byte, 20)},
	}))
	f.Add([]byte("100644 x\x00short"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseTree(data, 20)
		if err != nil {
			return
		}
		for _, e := range entries {
			if len(e.oid) != 20 {
				t.Fatalf("oid of %d bytes", len(e.oid))
			}
		}
	})
}

// FuzzParseMessage: any commit message parses, and trailers written by
// message.String come back.
func FuzzParseMessage(f *testing.F) {
	f.Add("Checkpoint: 1 file changed: a\n\nbody\n\nSessiond-Session: s\nSessiond-File: a\n")
	f.Add("subject only")
	f.Add("\n\n\nSessiond-: x\n")
	f.Add("\n Sessiond-Session: 0")
	f.Add("subject\n\nSessiond-Session: other\nSessiond-File: x")
	f.Fuzz(func(t *testing.T, s string) {
		m := parseMessage(s)
		_ = m.getInt(trailerFiles)
		back := parseMessage(m.String())
		if back.get(trailerSession) != m.get(trailerSession) {
			t.Fatalf("session trailer %q became %q", m.get(trailerSession), back.get(trailerSession))
		}
	})
}
