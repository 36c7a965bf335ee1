package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdEnv makes the test binary hold idle API connections: "SOCK N".
const holdEnv = "SESSIOND_E2E_HOLD"

// holdConnections opens n keep-alive connections to the socket, sends a
// request on each and reads its answer (200, or 503 past the daemon's cap),
// prints how many the daemon kept and sleeps holding them.
func holdConnections(spec string) int {
	sock, nstr, _ := strings.Cut(spec, " ")
	n, _ := strconv.Atoi(nstr)
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	var held []net.Conn
	kept, refused := 0, 0
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			break
		}
		fmt.Fprintf(c, "GET /v1/version HTTP/1.1\r\nHost: sessiond\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		switch {
		case err == nil && strings.Contains(line, " 503 "):
			refused++
			c.Close()
		case err == nil:
			kept++
			held = append(held, c)
		default:
			c.Close()
		}
	}
	fmt.Printf("kept %d refused %d\n", kept, refused)
	os.Stdout.Close()
	time.Sleep(time.Hour)
	runtime.KeepAlive(held) // the connections stay open while this sleeps
	return 0
}

// TestManyIdleConnections: 20,000 idle keep-alive connections from a user
// of an allowed group take the daemon neither its descriptors nor its
// answers: past the user's cap they are refused, a session that ends
// meanwhile gets its handoff, and ps answers within a second.
func TestManyIdleConnections(t *testing.T) {
	u := newUser(t)
	d := rootDaemon(t, u)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(binDir, "e2e.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := project(t)
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "sleep 3")
	var holders []*exec.Cmd
	kept := 0
	for range 2 {
		cmd := exec.Command(exe)
		cmd.Env = append(cleanEnv(), holdEnv+"="+d.sock+" 10000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, cmd)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, _ := io.ReadAll(out)
		var k, r int
		if _, err := fmt.Sscanf(string(line), "kept %d refused %d", &k, &r); err != nil || k+r != 10000 {
			t.Fatalf("holder: %q %v", line, err)
		}
		kept += k
	}
	if kept > 64 {
		t.Errorf("the daemon kept %d idle connections of one user, want at most its cap of 64", kept)
	}
	t0 := time.Now()
	d.mustCtl("ps")
	if took := time.Since(t0); took > time.Second {
		t.Errorf("ps took %v while the connections were held", took)
	}
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "complete" {
		t.Errorf("session ended %s", rec.EndReason)
	}
	if h := readHandoff(t, dir); h.SessionID != id {
		t.Errorf("handoff of %s, want %s", h.SessionID, id)
	}
	for _, h := range holders {
		_ = h.Process.Kill()
	}
}

// TestChattyChildLogCap: a child writing as fast as it can for 20 s keeps
// its log within log_max_size × log_keep, and the daemon's memory flat.
func TestChattyChildLogCap(t *testing.T) {
	t.Parallel()
	sock := newSocketPath(t)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), sock, "log_max_size = \"4MiB\"\nlog_keep = 3\n[defaults]\ncheckpoint = \"\"\n")
	rss0 := daemonRSS(t, d)
	id := d.start(project(t), "--", "timeout", "20", "yes")
	rec := d.waitEnded(id, 60*time.Second)
	rss1 := daemonRSS(t, d)
	var total int64
	for _, p := range []string{rec.LogPath, rec.LogPath + ".1", rec.LogPath + ".2", rec.LogPath + ".3"} {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
	}
	if limit := int64(3*4<<20) + 64<<10; total > limit {
		t.Errorf("logs on disk: %d bytes, over the cap of %d", total, limit)
	}
	if fileExists(rec.LogPath + ".3") {
		t.Error("more rotated files than log_keep allows")
	}
	if rss1-rss0 > 20<<20 {
		t.Errorf("daemon RSS grew %d MiB while the child wrote", (rss1-rss0)>>20)
	}
	t.Logf("logs on disk %.1f MiB, daemon RSS %d -> %d MiB", float64(total)/(1<<20), rss0>>20, rss1>>20)
}

// TestLogRotationLosesNoLine: with a cap that can keep all of it, every line
// a child wrote is in `sessionctl logs`, once, in order, across rotations.
func TestLogRotationLosesNoLine(t *testing.T) {
	t.Parallel()
	sock := newSocketPath(t)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), sock, "log_max_size = \"1MiB\"\nlog_keep = 20\n[defaults]\ncheckpoint = \"\"\n")
	const n = 1500000 // about 10.5 MB: several rotations, all kept
	id := d.start(project(t), "--", "seq", "1", strconv.Itoa(n))
	rec := d.waitEnded(id, 60*time.Second)
	if !fileExists(rec.LogPath + ".1") {
		t.Fatal("no rotation happened")
	}
	out := d.mustCtl("logs", id)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("logs has %d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q, want %d", i+1, l, i+1)
		}
	}
}
