package state

import (
	"path/filepath"
	"testing"
)

// BenchmarkSaveSessionState measures an atomic, fsynced save of a typical
// state (DESIGN §7 target: ≤ 2 ms).
func BenchmarkSaveSessionState(b *testing.B) {
	project := b.TempDir()
	s := fullState()
	for b.Loop() {
		if err := SaveSessionState(project, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadSessionState measures loading that state (target: ≤ 0.2 ms).
func BenchmarkLoadSessionState(b *testing.B) {
	project := b.TempDir()
	if err := SaveSessionState(project, fullState()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSessionState(project); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFile measures the bare atomic write of the same bytes: the
// floor that SaveSessionState adds its checks to (two fsyncs dominate).
func BenchmarkWriteFile(b *testing.B) {
	path := SessionStatePath(b.TempDir())
	if err := EnsureDir(filepath.Dir(path)); err != nil {
		b.Fatal(err)
	}
	data, err := marshalJSON(fullState())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProjectSaveSessionState measures a save through a handle with
// the daemon's own rights: what a user daemon does at each session end.
func BenchmarkProjectSaveSessionState(b *testing.B) {
	p, err := OpenProject(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	s := fullState()
	for b.Loop() {
		if err := p.SaveSessionState(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProjectLoadSessionState measures a load through a handle with
// the daemon's own rights.
func BenchmarkProjectLoadSessionState(b *testing.B) {
	p, err := OpenProject(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.SaveSessionState(fullState()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.LoadSessionState(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordWrite measures a session record's rewrite: with one sync
// (WriteRecord, the daemon's) against two (WriteJSONReusing, the content
// and the exchange's directory).
func BenchmarkRecordWrite(b *testing.B) {
	for _, c := range []struct {
		name  string
		write func(string, any) error
	}{{"one-sync", WriteRecord}, {"two-syncs", WriteJSONReusing}} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "session.json")
			rec := recordSeq{ID: "bench000"}
			for b.Loop() {
				rec.Seq++
				if err := c.write(path, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
