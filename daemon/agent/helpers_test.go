package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// placeholders replaces the test's temporary paths in b with names, longest
// first, so that golden files do not depend on them.
func placeholders(b []byte, names map[string]string) []byte {
	type pair struct{ from, to string }
	var ps []pair
	for from, to := range names {
		ps = append(ps, pair{from, to})
	}
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if len(ps[j].from) > len(ps[i].from) {
				ps[i], ps[j] = ps[j], ps[i]
			}
		}
	}
	s := string(b)
	for _, p := range ps {
		s = strings.ReplaceAll(s, p.from, p.to)
	}
	return []byte(s)
}

// readJSONFile decodes a JSON file the test expects to exist.
func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// fileMode is the permission bits of path.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// testLaunch is a Launch with its directories in a fresh temporary dir and
// an empty home, so that no real agent configuration is read.
func testLaunch(t *testing.T, argv ...string) Launch {
	t.Helper()
	root := t.TempDir()
	project := filepath.Join(root, "src", "app")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return Launch{
		Argv:       argv,
		SessionID:  "s1x2y3z4",
		SessionDir: filepath.Join(root, "state", "sessions", "s1x2y3z4"),
		ProjectDir: project,
		Sessionctl: "/usr/local/bin/sessionctl",
		Socket:     filepath.Join(root, "run", "sessiond.sock"),
		Env:        []string{"HOME=" + home, "PATH=/usr/bin:/bin"},
	}
}

// home is the launch's HOME.
func (l Launch) home() string { return lookupEnv(l.Env, "HOME") }
