package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// screenOf is sessionctl screen --json, decoded independently of the
// product's types.
type screenOf struct {
	Size struct {
		Cols int `json:"cols"`
		Rows int `json:"rows"`
	} `json:"size"`
	Cursor struct {
		X       int  `json:"x"`
		Y       int  `json:"y"`
		Visible bool `json:"visible"`
	} `json:"cursor"`
	AltScreen  bool     `json:"alt_screen"`
	Lines      []string `json:"lines"`
	Scrollback []string `json:"scrollback"`
}

func (d *daemon) screen(id string) screenOf {
	d.t.Helper()
	out := d.mustCtl("--json", "screen", "--scrollback", "100", id)
	var s screenOf
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		d.t.Fatalf("screen --json: %v\n%s", err, out)
	}
	return s
}

// waitScreen waits until the session's screen (with its scrollback) shows
// every one of want.
func (d *daemon) waitScreen(id string, want ...string) string {
	d.t.Helper()
	var text string
	waitFor(d.t, 20*time.Second, fmt.Sprintf("the screen of %s to show %q", id, want), func() (bool, string) {
		r := d.ctl("screen", "--scrollback", "100", id)
		text = r.stdout
		for _, w := range want {
			if !strings.Contains(text, w) {
				return false, r.String()
			}
		}
		return true, ""
	})
	return text
}

// ttyFlag reads the tty field of a session's record.
func (d *daemon) ttyFlag(id string) bool {
	d.t.Helper()
	var rec struct {
		TTY bool `json:"tty"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("inspect", id)), &rec); err != nil {
		d.t.Fatal(err)
	}
	return rec.TTY
}

// holderPID reads the holder's pid from its record in the session's dir.
func (d *daemon) holderPID(id string) int {
	d.t.Helper()
	var info struct {
		HolderPID int `json:"holder_pid"`
	}
	data := waitFile(d.t, filepath.Join(d.stateDir, "sessions", id, "holder.json"), 10*time.Second)
	if err := json.Unmarshal(data, &info); err != nil || info.HolderPID <= 0 {
		d.t.Fatalf("holder.json: %v %s", err, data)
	}
	return info.HolderPID
}

// tmux is a private tmux server in which the tests attach as a person
// would: keys typed with send-keys, the screen read with capture-pane.
type tmux struct {
	t    *testing.T
	name string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed on this machine (.ci/run installs it)")
	}
	x := &tmux{t: t, name: fmt.Sprintf("sdtest-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", x.name, "kill-server").Run() })
	return x
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", x.name, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(cleanEnv(), "TERM=xterm-256color")
	out, err := cmd.CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// shell opens a window running a plain shell, cols x rows, and returns its
// target.
func (x *tmux) shell(name string, cols, rows int) string {
	x.t.Helper()
	if strings.Contains(x.runQuiet("list-sessions"), "sd:") {
		x.run("new-window", "-t", "sd", "-n", name, tmuxShell)
	} else {
		x.run("new-session", "-d", "-s", "sd", "-n", name, "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), tmuxShell)
	}
	target := "sd:" + name
	x.waitPane(target, "tmux$")
	return target
}

// tmuxShell is the shell of a tmux window, with a prompt of its own.
const tmuxShell = "PS1='tmux$ ' bash --norc --noprofile"

func (x *tmux) runQuiet(args ...string) string {
	out, _ := exec.Command("tmux", append([]string{"-L", x.name, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out)
}

// typeLine types a line and Enter into the window.
func (x *tmux) typeLine(target, line string) {
	x.t.Helper()
	x.run("send-keys", "-t", target, "-l", line)
	x.run("send-keys", "-t", target, "Enter")
}

func (x *tmux) pane(target string) string {
	x.t.Helper()
	return x.run("capture-pane", "-p", "-t", target)
}

// waitPane waits until the window shows every one of want.
func (x *tmux) waitPane(target string, want ...string) string {
	x.t.Helper()
	var pane string
	waitFor(x.t, 20*time.Second, fmt.Sprintf("tmux window %s to show %q", target, want), func() (bool, string) {
		pane = x.pane(target)
		for _, w := range want {
			if !strings.Contains(pane, w) {
				return false, pane
			}
		}
		return true, ""
	})
	return pane
}

// pressUntil presses key in the window until it shows want: a key tmux
// sends while the attach loop is busy repainting can be read with the
// repaint's reply and is pressed again, as a person would.
func (x *tmux) pressUntil(target, key, want string) {
	x.t.Helper()
	waitFor(x.t, 30*time.Second, fmt.Sprintf("tmux window %s to show %q after %s", target, want, key), func() (bool, string) {
		pane := x.pane(target)
		if strings.Contains(pane, want) {
			return true, ""
		}
		x.run("send-keys", "-t", target, key)
		time.Sleep(500 * time.Millisecond)
		return strings.Contains(x.pane(target), want), pane
	})
}

// rawAttach attaches to a session through the daemon's socket as any
// client may, speaking the upgrade and the terminal framing by hand: one
// byte of frame type, four of big-endian length, the payload.
func rawAttach(t testing.TB, sock, id string, readOnly bool) (net.Conn, *bufio.Reader, int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + id + "/attach"
	if readOnly {
		path += "?read_only=1"
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: sessiond\r\nConnection: Upgrade\r\nUpgrade: sessiond-term\r\n\r\n", path)
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		t.Fatalf("attach %s: %v", id, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		return nil, nil, resp.StatusCode, string(body)
	}
	return c, br, resp.StatusCode, resp.Header.Get("Sessiond-Term-Status")
}

func writeFrame(t testing.TB, w io.Writer, typ byte, payload []byte) {
	t.Helper()
	hdr := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(append(hdr, payload...)); err != nil {
		t.Fatalf("write %c frame: %v", typ, err)
	}
}

func readFrame(r io.Reader) (byte, []byte, error) {
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return 0, nil, err
	}
	p := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	_, err := io.ReadFull(r, p)
	return hdr[0], p, err
}

func sizePayload(cols, rows int) []byte {
	p := make([]byte, 4)
	binary.BigEndian.PutUint16(p, uint16(cols))
	binary.BigEndian.PutUint16(p[2:], uint16(rows))
	return p
}
