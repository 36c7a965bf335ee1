package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport runs go test -json on a module of three tests, one passing,
// one failing and one skipped: the report shows the failure and the skip
// with its reason, not the pass, as go test without -v shows all but the
// skip.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m_test.go": `package m

import "testing"

func TestPass(t *testing.T) { t.Log("quiet") }
func TestFail(t *testing.T) { t.Error("it broke") }
func TestSkip(t *testing.T) { t.Skip("rpm is not installed") }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, _ := cmd.Output()
	var b strings.Builder
	skipped := report(strings.NewReader(string(out)), &b)
	got := b.String()
	for _, want := range []string{"--- FAIL: TestFail", "it broke", "--- SKIP: TestSkip", "rpm is not installed", "FAIL\texample.com/m"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"quiet", "=== RUN", "TestPass"} {
		if strings.Contains(got, not) {
			t.Errorf("the report has %q, which go test without -v leaves out:\n%s", not, got)
		}
	}
	if len(skipped) != 1 || skipped[0] != "example.com/m TestSkip" {
		t.Errorf("skipped = %q", skipped)
	}
}

// TestReportTimeout: a package that times out shows the test it was
// running, with the head of the panic, though the test itself never ends.
func TestReportTimeout(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m_test.go": `package m

import (
	"testing"
	"time"
)

func TestHang(t *testing.T) { t.Log("waiting for what never comes"); time.Sleep(time.Hour) }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-timeout", "2s", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, _ := cmd.Output()
	var b strings.Builder
	report(strings.NewReader(string(out)), &b)
	got := b.String()
	for _, want := range []string{"--- UNFINISHED: TestHang", "waiting for what never comes", "panic: test timed out after 2s", "running tests:", "FAIL\texample.com/m"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
}
