package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionNamesTheSocket: sessionctl version says which socket it
// uses and what answers there; --format '{{.Socket}}' needs no daemon.
func TestVersionNamesTheSocket(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	out := d.mustCtl("version")
	mode := "user mode"
	if os.Geteuid() == 0 {
		mode = "system mode"
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[1] != "socket     "+d.sock || !strings.HasPrefix(lines[2], "sessiond   ") ||
		!strings.Contains(lines[2], mode) || !strings.Contains(lines[2], "state dir "+d.stateDir) {
		t.Errorf("version:\n%s", out)
	}
	if got := d.mustCtl("version", "--format", "{{.Socket}} {{.Daemon.Mode}}"); got != d.sock+" "+strings.TrimSuffix(mode, " mode")+"\n" {
		t.Errorf("version --format = %q", got)
	}
	var info struct {
		Client, Socket string
		Daemon         struct {
			StateDir string `json:"state_dir"`
		}
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "version")), &info); err != nil || info.Socket != d.sock || info.Daemon.StateDir != d.stateDir {
		t.Errorf("version --json = %+v, %v", info, err)
	}

	// Without a daemon: the socket is still named; what needs the daemon
	// exits 3.
	none := newSocketPath(t)
	if r := runCtl(t, none, nil, "version", "--format", "{{.Socket}}"); r.code != 0 || r.stdout != none+"\n" {
		t.Errorf("version --format '{{.Socket}}' without a daemon:\n%s", r)
	}
	if r := runCtl(t, none, nil, "version", "--format", "{{.Daemon.PID}}"); r.code != 3 || r.stdout != "" {
		t.Errorf("version --format '{{.Daemon.PID}}' without a daemon:\n%s", r)
	}
	if r := runCtl(t, none, nil, "version", "--format", "{{.Nope}}"); r.code != 2 || !strings.Contains(r.stderr, "--format") {
		t.Errorf("version --format with an unknown field:\n%s", r)
	}
}

// TestReadmeCurlLine runs the README's curl line as a user would, with
// sessionctl on the PATH and the daemon found the usual way.
func TestReadmeCurlLine(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	id := d.start(project(t), "--", "sleep", "100")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var line string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "curl --unix-socket \"$(sessionctl version") {
			line = sc.Text()
		}
	}
	if line == "" {
		t.Fatal("README.md has no curl line that asks sessionctl version for the socket")
	}
	env := append(cleanEnv(), "SESSIOND_SOCKET="+d.sock, "PATH="+filepath.Dir(sessionctlBin)+":"+os.Getenv("PATH"))
	r := execute(t, env, "sh", "-c", line)
	var list []record
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("the README's curl line:\n%s", r)
	}
}
