package state

import (
	"testing"
)

// BenchmarkAsOtherUser measures what acting with another user's rights
// costs a root daemon: an empty operation (the thread switch alone), and a
// session state save and load, each as a throwaway user, to set beside
// BenchmarkProjectSaveSessionState and BenchmarkProjectLoadSessionState.
func BenchmarkAsOtherUser(b *testing.B) {
	u := newTestUser(b)
	_, project := userProject(b, u)
	p, err := OpenProject(project, &u.Owner)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("switch", func(b *testing.B) {
		for b.Loop() {
			if err := runAs(&u.Owner, func() error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("save", func(b *testing.B) {
		s := fullState()
		for b.Loop() {
			if err := p.SaveSessionState(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.LoadSessionState(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
