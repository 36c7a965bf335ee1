package session

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The environment is written over the empty file a spare directory holds,
// and over a longer one (a directory left with one) without a byte of the
// old one left after it.
func TestSaveEnvironWritesTheFileWhole(t *testing.T) {
	for _, old := range []string{"", "OLD=a value longer than the new one\x00SECOND=x\x00"} {
		dir := t.TempDir()
		path := filepath.Join(dir, EnvironFile)
		if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		want := []string{"A=1", "B=two"}
		s := &Session{dir: dir, uid: os.Geteuid(), environ: want}
		if err := s.saveEnviron(); err != nil {
			t.Fatalf("old %q: %v", old, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "A=1\x00B=two\x00" {
			t.Errorf("old %q: the file holds %q", old, data)
		}
		if got, given, err := readEnviron(path); err != nil || !slices.Equal(got, want) || given != nil {
			t.Errorf("old %q: read back %q, %v; want %q", old, got, err, want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("old %q: mode %v, %v; want 0600", old, fi.Mode(), err)
		}
	}
}

// The values given with --env are kept after the caller's environment,
// and read back apart from it; a session started with a clean
// environment keeps them alone.
func TestSaveEnvironKeepsTheGivenValues(t *testing.T) {
	for _, environ := range [][]string{{"A=1", "HOME=/home/me"}, nil} {
		dir := t.TempDir()
		s := &Session{dir: dir, uid: os.Geteuid(), environ: environ}
		s.rec.EnvKeys = []string{"HOME", "TOKEN"}
		s.spec.Env = map[string]string{"HOME": "/elsewhere", "TOKEN": "a=b c", "FROM_TOML": "x"}
		if err := s.saveEnviron(); err != nil {
			t.Fatal(err)
		}
		env, given, err := readEnviron(filepath.Join(dir, EnvironFile))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(env, environ) || (environ == nil) != (env == nil) {
			t.Errorf("the caller's environment read back as %q, want %q", env, environ)
		}
		if len(given) != 2 || given["HOME"] != "/elsewhere" || given["TOKEN"] != "a=b c" {
			t.Errorf("the --env values read back as %q", given)
		}
	}
}
