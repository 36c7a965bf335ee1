package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The daemon runs its programs of their own, sessiond-holder for a
// terminal and sessiond-logkeeper for the logs, where they are installed
// beside sessiond (bin/, the packages' libexec), and sessiond's own modes
// where sessiond stands alone (a go install of cmd/sessiond): either way a
// terminal is held and a log is kept the same.
func TestLibexecPrograms(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(alone, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sessiondBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, "sessiond"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		bin            string
		holder, keeper program
	}{
		{"beside sessiond", sessiondBin,
			program{filepath.Join(binDir, "sessiond-holder"), nil},
			program{filepath.Join(binDir, "sessiond-logkeeper"), []string{"--socket", "%s"}}},
		{"sessiond alone", filepath.Join(alone, "sessiond"),
			program{filepath.Join(alone, "sessiond"), []string{"holder"}},
			program{filepath.Join(alone, "sessiond"), []string{"logkeeper", "--socket", "%s"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			d := startBuild(t, c.bin, nil, stateDir, newSocketPath(t), "")
			tty := d.start("--tty", project(t), "--", "sh", "-c", "echo held on a terminal; read x; echo got $x")
			plain := d.start(project(t), "--", "sh", "-c", "echo kept in a log; read x")
			d.waitScreen(tty, "held on a terminal")
			waitFor(t, 10*time.Second, "the plain session's line in its log", func() (bool, string) {
				out := d.ctl("logs", plain).stdout
				return strings.Contains(out, "kept in a log"), out
			})
			checkProgram(t, "the holder", d.holderPID(tty), c.holder, "")
			checkProgram(t, "the log keeper", keeperPID(t, stateDir), c.keeper, filepath.Join(stateDir, "logkeeper.sock"))
			d.mustCtl("send", tty, "it", "--enter")
			d.waitScreen(tty, "got it")
			if rec := d.waitEnded(tty, 20*time.Second); rec.EndReason != "complete" {
				t.Errorf("the terminal session ended %s, want complete", rec.EndReason)
			}
		})
	}
}

// program is an executable and the arguments it runs with.
type program struct {
	exe  string
	argv []string // after argv[0]; %s stands for the keeper's socket
}

// checkProgram checks that pid runs want's executable with want's
// arguments (%s in them standing for sock).
func checkProgram(t *testing.T, what string, pid int, want program, sock string) {
	t.Helper()
	if pid <= 0 {
		t.Errorf("%s: no process", what)
		return
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != want.exe {
		t.Errorf("%s (%d) runs %q (%v), want %s", what, pid, exe, err, want.exe)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	for _, a := range want.argv {
		argv = append(argv, strings.ReplaceAll(a, "%s", sock))
	}
	if got := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")[1:]; !slices.Equal(got, argv) {
		t.Errorf("%s runs with arguments %q, want %q", what, got, argv)
	}
}
