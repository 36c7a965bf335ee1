package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// chromium is Debian's browser, which the page's test drives.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is needed to test the phone's page (apt-get install chromium; .ci/run installs it)")
	return ""
}

// TestWebPage drives the phone's page in a real Chromium, 360 px wide: it
// asks for a token, lists the sessions live, opens one (as a
// notification's link would, #/s/ID), shows its screen, sends an answer
// typed with the keyboard, extends and stops it, and says when the daemon
// is unreachable.
func TestWebPage(t *testing.T) {
	links := filepath.Join(t.TempDir(), "links")
	w := startWebDaemon(t, "[web]\nlisten = \"127.0.0.1:0\"\n\n[[notify]]\non = [\"started\"]\ncommand = [\"sh\", \"-c\", \"echo $SESSIOND_LINK >> "+links+"\"]\n")
	if !strings.HasPrefix(w.url, "http://127.0.0.1:") {
		t.Fatalf("a loopback listener without tls: %s", w.url)
	}
	tok := w.token(t, "--user", "root", "--scope", "control")
	dir := project(t)
	id := w.start("--tty", "--name", "phone-job", dir, "--", "sh")
	before := w.inspect(id).Deadline

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(360, 740))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	var console []string
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(func(f string, a ...any) { console = append(console, fmt.Sprintf(f, a...)) }))
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 150*time.Second)
	defer cancel()

	ID := func(id string) chromedp.ID { return chromedp.ID(id) }
	if err := chromedp.Do(ctx,
		// A phone: 360 CSS pixels wide, touch, mobile.
		chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2)),
		chromedp.Navigate(w.url+"/"),
		chromedp.WaitVisible(ID("token")),
		// Enter submits, as a person signs in.
		chromedp.SendKeys(ID("token"), tok+"\r"),
		chromedp.WaitVisible(ID("s-"+id)),
	); err != nil {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		html, herr := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerHTML`))
		dcancel()
		t.Fatalf("sign in and the list: %v (console %v; page %q %v)", err, console, html, herr)
	}
	listText, err := chromedp.Run(ctx, chromedp.Text(ID("sessions")))
	if err != nil || !strings.Contains(listText, "phone-job") || !strings.Contains(listText, "running") || !strings.Contains(listText, "left") {
		t.Errorf("the list says %q (%v)", listText, err)
	}
	if width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || width > 360 {
		t.Errorf("the page is %d px wide on a 360 px screen (%v)", width, err)
	}
	// A notification's link: the session's own address; the answer typed
	// with the keyboard, Enter sending it.
	var link string
	waitFor(t, 10*time.Second, "the started notification's link", func() (bool, string) {
		b, _ := os.ReadFile(links)
		link = strings.TrimSpace(string(b))
		return link != "", ""
	})
	if link != w.url+"/#/s/"+id {
		t.Errorf("the notification links to %q, want %s", link, w.url+"/#/s/"+id)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(link),
		chromedp.WaitVisible(ID("send-text")),
		chromedp.Focus(ID("send-text")),
		chromedp.SendKeys(ID("send-text"), "echo phone-$((6*7))\n"),
	); err != nil {
		t.Fatalf("the session's page: %v (console %v)", err, console)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("screen").textContent.includes("phone-42")`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		screen, _ := chromedp.Run(ctx, chromedp.Text(ID("screen")))
		t.Fatalf("the answer did not reach the session: %v (screen %q, console %v)", err, screen, console)
	}
	// A shell waits for no permission: no choices are shown to press.
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("choices")).display !== "none"`)); err != nil || shown {
		t.Errorf("a permission prompt's choices are shown for a session that asks none (%v)", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(ID("extend"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deadline to move by 30m", func() (bool, string) {
		d := w.inspect(id).Deadline
		return d.Sub(before) >= 29*time.Minute, d.String()
	})
	if err := chromedp.Do(ctx, chromedp.Click(ID("stop")), chromedp.Click(ID("stop"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("d-state").textContent.startsWith("ended")`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("stop from the page: %v (console %v)", err, console)
	}
	if rec := w.inspect(id); rec.State != "ended" {
		t.Errorf("after stop the session is %s", rec.State)
	}

	// A session that appears while the page is open: an agent that asks
	// for a permission. The page says what for, offers the prompt's
	// choices, and the first lets the agent go on.
	if err := chromedp.Do(ctx, chromedp.Navigate(w.url+"/#/")); err != nil {
		t.Fatal(err)
	}
	a := newAgentSetup(t, "prompt,ask,stop,hang")
	asking := w.start(append(a.flags, "--tty", "--name", "asker", project(t), "--", "claude", "fix it")...)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(ID("s-"+asking))); err != nil {
		t.Fatalf("the new session does not appear in the list: %v", err)
	}
	waitFor(t, 20*time.Second, "the agent to wait for a permission", func() (bool, string) {
		rec := w.agentRecord(asking)
		return rec.Agent != nil && rec.Agent.State == "waiting", fmt.Sprint(rec.Agent)
	})
	if err := chromedp.Do(ctx, chromedp.Click(ID("s-"+asking)), chromedp.WaitVisible(ID("choices"))); err != nil {
		t.Fatalf("the choices of a permission prompt: %v", err)
	}
	if wait, _ := chromedp.Run(ctx, chromedp.Text(ID("d-wait"))); !strings.Contains(wait, "permission") {
		t.Errorf("the page says %q of the waiting agent", wait)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-send="1"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the agent to go on after the answer", func() (bool, string) {
		return len(agenttest.Find(agenttest.ReadLog(t, a.log), "granted")) == 1, fmt.Sprint(agenttest.ReadLog(t, a.log))
	})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`getComputedStyle(document.getElementById("choices")).display === "none"`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the choices stay after the answer: %v", err)
	}

	// A read token: the page reads, and offers nothing to press (no Stop,
	// +30 min, answer or choices); the daemon refuses a stop sent with it
	// all the same, and nothing is stopped.
	readTok := w.token(t, "--user", "root", "--scope", "read")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`localStorage.removeItem("sessiond-token"); location.hash = "#/"; true`)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"reload", chromedp.Reload()},
		{"the sign-in form", chromedp.WaitVisible(ID("token"))},
		{"sign in", chromedp.SendKeys(ID("token"), readTok+"\r")},
		{"the list", chromedp.WaitVisible(ID("s-" + asking))},
		{"open the session", chromedp.Click(ID("s-" + asking))},
		{"its screen", chromedp.WaitVisible(ID("screen"))},
	}
	for _, st := range steps {
		sctx, scancel := context.WithTimeout(ctx, 15*time.Second)
		err := chromedp.Do(sctx, st.do)
		scancel()
		if err != nil {
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			page, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerText + " | " + location.href + " | " + localStorage.getItem("sessiond-token")`))
			dcancel()
			t.Fatalf("the page with a read token, %s: %v\n%s", st.what, err, page)
		}
	}
	const nothingToPress = `document.getElementById("d-name").textContent.includes("asker") &&
		["actions", "send-form", "choices"].every((id) => getComputedStyle(document.getElementById(id)).display === "none") &&
		document.getElementById("status").textContent.includes("read only")`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](nothingToPress, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Errorf("the page with a read token offers what it may not do (%v):\n%s", err, page)
	}
	stopped, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`fetch("/v1/sessions/`+asking+`/stop", {method: "POST", headers: {"Authorization": "Bearer " + localStorage.getItem("sessiond-token"), "Content-Type": "application/json"}, body: "{}"}).then((r) => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || stopped != 403 {
		t.Errorf("a stop with a read token: status %v (%v), want 403", stopped, err)
	}
	if rec := w.inspect(asking); rec.State != "running" {
		t.Errorf("a read token stopped the session: %s", rec.State)
	}
	w.mustCtl("stop", asking)

	w.stop()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.includes("unreachable")`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Text(ID("status")))
		t.Errorf("the page does not say the daemon is unreachable: %v (status %q)", err, status)
	}

}
