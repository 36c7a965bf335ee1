package state

import "testing"

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
