package notify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
)

// fakeNotifySend puts a notify-send that records its arguments and
// environment first in PATH. The machine has no desktop session to show a
// real notification on; what sessiond controls is the command it runs.
func fakeNotifySend(t *testing.T, dir string) (record string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the desktop sink runs notify-send only on Linux")
	}
	record = filepath.Join(dir, "notify-send.record")
	writeScript(t, dir, "notify-send", `for a in "$@"; do printf '%s\n' "$a"; done > "`+record+`.tmp"
echo "uid=$(id -u)" >> "`+record+`.tmp"
echo "bus=$DBUS_SESSION_BUS_ADDRESS" >> "`+record+`.tmp"
mv "`+record+`.tmp" "`+record+`"
`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return record
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	waitFor(t, 5*time.Second, path, func() bool { _, err := os.Stat(path); return err == nil })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestDesktop(t *testing.T) {
	record := fakeNotifySend(t, t.TempDir())
	rule := config.NotifyRule{On: []string{"ended"}, Desktop: true}
	if err := Check(rule, ""); err != nil && !strings.Contains(err.Error(), "D-Bus") {
		t.Fatalf("Check: %v", err)
	}
	n, _ := newNotifier(t, nil, Options{})
	ev := endedEvent("d1", "error")
	ev.Message = "--not-an-option"
	if err := n.Test(context.Background(), rule, FromDaemon, ev); err != nil {
		t.Fatalf("Test: %v", err)
	}
	got := readLines(t, record)
	want := []string{"--app-name=sessiond", "--urgency=critical", "Session s-d1 ended: error (exit 1)", "not-an-option"}
	if len(got) < len(want) || strings.Join(got[:len(want)], "|") != strings.Join(want, "|") {
		t.Errorf("notify-send arguments = %q, want %q", got, want)
	}
}

// TestDesktopAsUser: a root daemon shows the notification on the session
// owner's bus, as that user.
func TestDesktopAsUser(t *testing.T) {
	owner := throwawayUser(t)
	bin := filepath.Join(owner.Home, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(bin, owner.UID, owner.GID); err != nil {
		t.Fatal(err)
	}
	record := fakeNotifySend(t, bin)
	n, _ := newNotifier(t, nil, Options{})
	ev := Event{Type: config.NotifyAgentWaiting, SessionID: "d2", Owner: owner}
	if err := n.Test(context.Background(), config.NotifyRule{On: []string{"agent_waiting"}, Desktop: true}, FromDaemon, ev); err != nil {
		t.Fatalf("Test: %v", err)
	}
	got := strings.Join(readLines(t, record), "\n")
	if !strings.Contains(got, "uid="+strconv.Itoa(owner.UID)+"\n") {
		t.Errorf("notify-send ran as %q, want uid %d", got, owner.UID)
	}
	if want := "bus=unix:path=/run/user/" + strconv.Itoa(owner.UID) + "/bus"; !strings.Contains(got, want) {
		t.Errorf("notify-send record %q lacks %s", got, want)
	}
}

func TestDesktopMissing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the desktop sink runs notify-send only on Linux")
	}
	t.Setenv("PATH", t.TempDir())
	rule := config.NotifyRule{On: []string{"ended"}, Desktop: true}
	err := Check(rule, "")
	var ne *config.NotifyError
	if !errors.As(err, &ne) || ne.Key != "desktop" || !strings.Contains(err.Error(), `"notify-send" not found`) || !strings.Contains(err.Error(), "libnotify") {
		t.Fatalf("Check = %v, want desktop: notify-send not found, with what to install", err)
	}
	n, _ := newNotifier(t, nil, Options{})
	if err := n.Test(context.Background(), rule, FromDaemon, Event{}); err == nil || !strings.Contains(err.Error(), `"notify-send" not found`) {
		t.Fatalf("Test = %v, want notify-send not found", err)
	}
}
