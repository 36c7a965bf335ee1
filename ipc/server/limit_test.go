//go:build linux

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the clients, run as other uids.
const helperEnv = "SERVER_TEST_CLIENT"

// Throwaway uids for the clients: no account needs to exist for a process
// to run as them, and the socket is opened to everyone for the test.
const (
	attackerUID = 61001
	otherUID    = 61002
	thirdUID    = 61003
)

var exeCopy struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runClient(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if exeCopy.path != "" {
			os.RemoveAll(filepath.Dir(exeCopy.path))
		}
	}))
}

// peerCreds is SO_PEERCRED, as the daemon's Credentials.
func peerCreds(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, serr
	}
	return Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)}, nil
}

type peerKey struct{}

type testServer struct {
	sock string
	l    *Listener
	srv  *http.Server
	logs *observer.ObservedLogs
	done chan error
}

// startServer serves a small API through a Listener on a socket anyone
// may connect to: /v1/health answers with the caller's uid.
func startServer(t *testing.T, lim Limits, tmo Timeouts, extra map[string]http.HandlerFunc) *testServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	inner, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	l := NewListener(inner, lim, peerCreds, zap.New(core))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(peerKey{}).(Peer)
		fmt.Fprintf(w, `{"ok":true,"uid":%d}`, p.UID)
	})
	for pattern, h := range extra {
		mux.HandleFunc(pattern, h)
	}
	srv := &http.Server{
		Handler: tmo.BoundBody(mux),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if p, ok := PeerOf(c); ok {
				return context.WithValue(ctx, peerKey{}, p)
			}
			return ctx
		},
		ErrorLog: zap.NewStdLog(zap.NewNop()),
	}
	tmo.Apply(srv)
	ts := &testServer{sock: sock, l: l, srv: srv, logs: logs, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ts.stop(t)
		os.RemoveAll(dir)
	})
	return ts
}

func (ts *testServer) stop(t *testing.T) {
	if ts.srv == nil {
		return
	}
	ts.srv.Close()
	if err := <-ts.done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
	ts.l.Close()
	ts.srv = nil
}

// client runs the test binary as a client with the given uid.
func client(t *testing.T, uid int, mode string, args ...string) *exec.Cmd {
	t.Helper()
	exeCopy.once.Do(func() {
		// The test binary sits in a directory only root may enter: the
		// clients run a copy that their uid can execute.
		exe, err := os.Executable()
		if err != nil {
			exeCopy.err = err
			return
		}
		dir, err := os.MkdirTemp("", "srvtest")
		if err != nil {
			exeCopy.err = err
			return
		}
		os.Chmod(dir, 0o755)
		data, err := os.ReadFile(exe)
		if err != nil {
			exeCopy.err = err
			return
		}
		exeCopy.path = filepath.Join(dir, "client")
		exeCopy.err = os.WriteFile(exeCopy.path, data, 0o755)
	})
	if exeCopy.err != nil {
		t.Fatal(exeCopy.err)
	}
	cmd := exec.Command(exeCopy.path, args...)
	cmd.Env = []string{helperEnv + "=" + mode, "GORACE=atexit_sleep_ms=0", "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Stderr = os.Stderr
	return cmd
}

// probeResult is what a probe client reports.
type probeResult struct {
	Status int     `json:"status"`
	Body   string  `json:"body"`
	Err    string  `json:"err"`
	MS     float64 `json:"ms"` // from dialing to the whole response read
}

// probe makes one request to /v1/health as uid.
func probe(t *testing.T, sock string, uid int) probeResult {
	t.Helper()
	cmd := client(t, uid, "probe", sock)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe as uid %d: %v", uid, err)
	}
	var res probeResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return res
}

// floodSummary is what a flood client reports once it has dialed all its
// connections.
type floodSummary struct {
	OK          int     `json:"ok"`
	Unavailable int     `json:"unavailable"`
	Failed      int     `json:"failed"`
	FailSample  string  `json:"fail_sample"`
	Body503     string  `json:"body_503"`
	ClosedEarly int     `json:"closed_early"` // held connections closed by the server before the flood ended
	Seconds     float64 `json:"seconds"`
}

// floodClosed is what it reports once the server closed every held one.
type floodClosed struct {
	Closed  int     `json:"closed"`
	MinIdle float64 `json:"min_idle_s"` // shortest time from a response to the server closing that connection
	MaxIdle float64 `json:"max_idle_s"`
}

func runClient(mode string, args []string) int {
	switch mode {
	case "probe":
		start := time.Now()
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", args[0])
		}}, Timeout: 10 * time.Second}
		res := probeResult{}
		resp, err := c.Get("http://sessiond/v1/health")
		if err != nil {
			res.Err = err.Error()
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res.Status, res.Body = resp.StatusCode, string(body)
		}
		res.MS = float64(time.Since(start).Microseconds()) / 1000
		json.NewEncoder(os.Stdout).Encode(res)
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[1])
		return flood(args[0], n)
	}
	fmt.Fprintln(os.Stderr, "unknown client mode", mode)
	return 2
}

// flood dials n connections one after another, makes one keep-alive
// request on each, keeps those answered 200 open and idle, and reports.
func flood(sock string, n int) int {
	start := time.Now()
	var sum floodSummary
	var closed floodClosed
	closed.MinIdle = 1e9
	var mu sync.Mutex
	var wg sync.WaitGroup
	flooding := true
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			sum.Failed++
			if sum.FailSample == "" {
				sum.FailSample = "dial: " + err.Error()
			}
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		_, err = io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: sessiond\r\n\r\n")
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(br, nil)
		}
		if err != nil {
			sum.Failed++
			if sum.FailSample == "" {
				sum.FailSample = err.Error()
			}
			c.Close()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			sum.OK++
			answered := time.Now()
			c.SetDeadline(time.Time{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := br.ReadByte() // blocks until the server closes it
				idle := time.Since(answered).Seconds()
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					return // unexpected data: not counted as closed
				}
				if flooding {
					sum.ClosedEarly++
				}
				closed.Closed++
				closed.MinIdle = min(closed.MinIdle, idle)
				closed.MaxIdle = max(closed.MaxIdle, idle)
				c.Close()
			}()
		case http.StatusServiceUnavailable:
			sum.Unavailable++
			if sum.Body503 == "" {
				sum.Body503 = string(body)
			}
			c.Close()
		default:
			sum.Failed++
			if sum.FailSample == "" {
				sum.FailSample = fmt.Sprintf("status %d: %s", resp.StatusCode, body)
			}
			c.Close()
		}
	}
	mu.Lock()
	flooding = false
	sum.Seconds = time.Since(start).Seconds()
	json.NewEncoder(os.Stdout).Encode(sum)
	mu.Unlock()
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(closed)
	return 0
}

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory being read
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTwentyThousandIdleConnections is the attack: one user opens
// 20,000 keep-alive connections and leaves them idle. The daemon holds at
// most its per-uid cap of them, answers every other one 503, still serves
// another user within a second, closes the idle ones after IdleTimeout,
// and leaks no descriptor.
func TestTwentyThousandIdleConnections(t *testing.T) {
	// Raise the soft limit to the hard one (the Go runtime does so at
	// start too); the hard one cannot be raised without CAP_SYS_RESOURCE.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Each client process holds at most its share; the server, by design,
	// far fewer. The clients' descriptors are their own process's.
	const total = 20000
	clients := 2
	for uint64(total/clients)+64 > lim.Max {
		clients++
	}
	t.Logf("RLIMIT_NOFILE %d/%d: %d clients of %d connections each", lim.Cur, lim.Max, clients, total/clients)

	baseline := openFDs(t)
	tmo := DefaultTimeouts()
	tmo.Idle = 6 * time.Second
	ts := startServer(t, Limits{}, tmo, nil)

	var floods []*exec.Cmd
	var outs []*bufio.Reader
	floodStart := time.Now()
	for i := 0; i < clients; i++ {
		cmd := client(t, attackerUID, "flood", ts.sock, strconv.Itoa(total/clients))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		floods = append(floods, cmd)
		outs = append(outs, bufio.NewReader(out))
	}
	defer func() {
		for _, c := range floods {
			c.Process.Kill()
			c.Wait()
		}
	}()

	// Mid-flood: another user is served, and the server's descriptors
	// stay bounded by the caps.
	peakFDs, peakOpen := 0, 0
	sample := func() {
		peakFDs = max(peakFDs, openFDs(t))
		peakOpen = max(peakOpen, ts.l.Stats().Open)
	}
	waitFor(t, 60*time.Second, "a thousand refusals", func() bool { sample(); return ts.l.Stats().Rejected >= 1000 })
	mid := probe(t, ts.sock, otherUID)
	sample()
	if mid.Status != http.StatusOK || mid.MS > 1000 || !strings.Contains(mid.Body, fmt.Sprintf(`"uid":%d`, otherUID)) {
		t.Errorf("during the flood, uid %d got %+v; want 200 within a second", otherUID, mid)
	}

	var sums []floodSummary
	for i, out := range outs {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("flood client %d: %v", i, err)
		}
		var s floodSummary
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("flood client %d: %q: %v", i, line, err)
		}
		sums = append(sums, s)
		sample()
	}
	// Over its cap, unless its first connections have already idled out.
	if time.Since(floodStart) < tmo.Idle-time.Second {
		if over := probe(t, ts.sock, attackerUID); over.Status != http.StatusServiceUnavailable || !strings.Contains(over.Body, `"code":"unavailable"`) {
			t.Errorf("uid %d over its cap got %+v, want 503 unavailable", attackerUID, over)
		}
	} else {
		t.Logf("the flood took %v: its first connections are idling out, so no over-cap probe", time.Since(floodStart))
	}
	after := probe(t, ts.sock, otherUID)
	sample()
	var ok, unavailable, failed, closedEarly int
	var longest float64
	for _, s := range sums {
		ok += s.OK
		unavailable += s.Unavailable
		failed += s.Failed
		closedEarly += s.ClosedEarly
		longest = max(longest, s.Seconds)
	}
	t.Logf("flood: %d held, %d refused with 503, %d failed, %d closed idle during the flood; longest client %.1fs; server peak %d descriptors (baseline %d), %d connections; probes %.1f ms and %.1f ms",
		ok, unavailable, failed, closedEarly, longest, peakFDs, baseline, peakOpen, mid.MS, after.MS)
	if ok+unavailable+failed != total {
		t.Errorf("clients report %d connections, want %d", ok+unavailable+failed, total)
	}
	if failed != 0 {
		t.Errorf("%d connections failed without a 503 (%s)", failed, sums[0].FailSample+sums[len(sums)-1].FailSample)
	}
	// How many the flood held at once: what its clients were served less
	// what they saw closed, while none idled out. Once some did (a flood
	// slower than the idle timeout, on a loaded machine), a client learns
	// of a close later than the server frees its place, and only the
	// server's own count of open connections tells (checked below).
	if closedEarly == 0 && ok != DefaultMaxConnsPerUID || ok < DefaultMaxConnsPerUID {
		t.Errorf("uid %d held %d connections at once (%d served, %d closed meanwhile), want the cap %d",
			attackerUID, ok-closedEarly, ok, closedEarly, DefaultMaxConnsPerUID)
	}
	if closedEarly > 0 && longest < tmo.Idle.Seconds() {
		t.Errorf("%d connections closed before the idle timeout", closedEarly)
	}
	var body struct{ Error, Code string }
	if err := json.Unmarshal([]byte(sums[0].Body503), &body); err != nil || body.Code != "unavailable" || !strings.Contains(body.Error, "uid 61001") {
		t.Errorf("503 body %q: want code unavailable naming the uid", sums[0].Body503)
	}
	if after.Status != http.StatusOK || after.MS > 1000 {
		t.Errorf("after the flood, uid %d got %+v; want 200 within a second", otherUID, after)
	}
	if limit := baseline + DefaultMaxConnsPerUID + maxRejecting + 16; peakFDs > limit {
		t.Errorf("the server held %d descriptors at the peak, want at most %d", peakFDs, limit)
	}
	if peakOpen > DefaultMaxConnsPerUID+2 {
		t.Errorf("the listener had %d connections open at the peak, want at most %d", peakOpen, DefaultMaxConnsPerUID+2)
	}

	// The idle ones are closed after IdleTimeout, and the uid may
	// connect again.
	for i, out := range outs {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("flood client %d: %v", i, err)
		}
		var c floodClosed
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("flood client %d: %q: %v", i, line, err)
		}
		t.Logf("client %d: %d idle connections closed after %.2fs to %.2fs", i, c.Closed, c.MinIdle, c.MaxIdle)
		if c.Closed != sums[i].OK {
			t.Errorf("client %d: %d of its %d connections closed", i, c.Closed, sums[i].OK)
		}
		// The client times each connection from when it saw it made,
		// which a loaded machine can put a while after the server's
		// accept: early by up to a second, late by up to two.
		if c.Closed > 0 && (c.MinIdle < tmo.Idle.Seconds()-1 || c.MaxIdle > tmo.Idle.Seconds()+2) {
			t.Errorf("client %d: idle connections closed after %.2fs to %.2fs, want about %v", i, c.MinIdle, c.MaxIdle, tmo.Idle)
		}
	}
	for _, c := range floods {
		if err := c.Wait(); err != nil {
			t.Errorf("flood client: %v", err)
		}
	}
	floods = nil
	waitFor(t, 5*time.Second, "no connection open", func() bool { return ts.l.Stats().Open == 0 })
	if again := probe(t, ts.sock, attackerUID); again.Status != http.StatusOK {
		t.Errorf("uid %d after its idle connections closed got %+v, want 200", attackerUID, again)
	}
	if n := len(ts.logs.FilterMessage("refusing API connections past the cap").All()); n < 1 || n > 1+int(longest/rejectLogGap.Seconds())+2 {
		t.Errorf("refusals logged %d times over %.0fs, want about once per %v", n, longest, rejectLogGap)
	}

	ts.stop(t)
	waitFor(t, 5*time.Second, "the server's descriptors back to the baseline", func() bool { return openFDs(t) <= baseline })
}

// TestCaps: the per-uid and the total cap each turn a connection away,
// and a freed place is taken again.
func TestCaps(t *testing.T) {
	ts := startServer(t, Limits{Total: 3, PerUID: 2}, DefaultTimeouts(), nil)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	get := func(c net.Conn) (int, string) {
		t.Helper()
		if _, err := io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: sessiond\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("unix", ts.sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if status, body := get(c); status != http.StatusOK {
			t.Fatalf("root connection %d: %d %s", i, status, body)
		}
	}
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	status, body := get(c)
	c.Close()
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "uid 0 has 2 connections open") {
		t.Errorf("root's third connection: %d %s; want 503 naming the per-uid cap", status, body)
	}
	if res := probe(t, ts.sock, otherUID); res.Status != http.StatusOK {
		t.Errorf("uid %d under the total cap: %+v, want 200", otherUID, res)
	}
	// The probe has closed its connection: a third uid takes the third
	// place with an idle keep-alive connection.
	cmd := client(t, thirdUID, "flood", ts.sock, "1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var sum floodSummary
	if err := json.NewDecoder(out).Decode(&sum); err != nil || sum.OK != 1 {
		t.Fatalf("third uid: %+v, %v", sum, err)
	}
	if res := probe(t, ts.sock, otherUID); res.Status != http.StatusServiceUnavailable || !strings.Contains(res.Body, "the daemon has 3 connections open") {
		t.Errorf("uid %d past the total cap: %+v, want 503 naming the total cap", otherUID, res)
	}
	held[0].Close()
	held = held[1:]
	waitFor(t, 5*time.Second, "the place freed", func() bool { return ts.l.Stats().Open == 2 })
	if res := probe(t, ts.sock, otherUID); res.Status != http.StatusOK {
		t.Errorf("uid %d after a place was freed: %+v, want 200", otherUID, res)
	}
	if st := ts.l.Stats(); st.Rejected != 2 {
		t.Errorf("Rejected = %d, want 2", st.Rejected)
	}
}

// TestSilentConnectionClosed: a connection that never sends a request is
// closed after ReadHeaderTimeout and gives its place back; one refused
// past a cap that sends nothing is closed within a second, unanswered.
func TestSilentConnectionClosed(t *testing.T) {
	tmo := DefaultTimeouts()
	tmo.ReadHeader = 300 * time.Millisecond
	ts := startServer(t, Limits{Total: 1, PerUID: 1}, tmo, nil)
	baseline := openFDs(t)
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 5*time.Second, "the connection admitted", func() bool { return ts.l.Stats().Open == 1 })
	c2, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	start := time.Now()
	for _, conn := range []net.Conn{c, c2} {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(make([]byte, 1))
		if n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("silent connection read %d, %v; want EOF from the server", n, err)
		}
	}
	if d := time.Since(start); d < tmo.ReadHeader-50*time.Millisecond || d > rejectTimeout+time.Second {
		t.Errorf("silent connections closed after %v, want between %v and %v", d, tmo.ReadHeader, rejectTimeout+time.Second)
	}
	waitFor(t, 5*time.Second, "the place given back", func() bool { return ts.l.Stats().Open == 0 })
	c.Close()
	c2.Close()
	waitFor(t, 5*time.Second, "descriptors back to the baseline", func() bool { return openFDs(t) <= baseline })
}

// TestAcceptOutOfDescriptors: accept failing with EMFILE does not end
// Serve; the listener backs off, logs it once, and serves the waiting
// client once descriptors are free.
func TestAcceptOutOfDescriptors(t *testing.T) {
	// A descriptor that another goroutine of the test binary closes
	// between the filling and the connect (a finished test's connection)
	// lets the client in before the descriptors run out: the listener is
	// then starved with nobody waiting, and recovers only at the next
	// connection. Such a try proves nothing and is made again.
	for try := 1; ; try++ {
		ts, fd, waited := starveAccept(t)
		if waited {
			checkServedAfterStarving(t, ts, fd)
			return
		}
		t.Logf("try %d: the client was let in before the descriptors ran out", try)
		if try == 5 {
			t.Fatalf("the client was let in before the descriptors ran out in %d tries", try)
		}
	}
}

// starveAccept starts a server, runs the test process out of descriptors
// and connects a client, which waits in the backlog while accept fails. It
// returns the client's descriptor once accept has failed several times and
// descriptors are back, and whether the client was still waiting then.
func starveAccept(t *testing.T) (*testServer, int, bool) {
	ts := startServer(t, Limits{}, DefaultTimeouts(), nil)
	// The client's socket exists before the descriptors run out; connect
	// needs none.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(openFDs(t) + 32)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var filler []int
	release := func() {
		for _, f := range filler {
			unix.Close(f)
		}
		filler = nil
		unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	}
	defer release()
	for {
		f, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.EMFILE) {
				t.Fatalf("filling descriptors: %v", err)
			}
			break
		}
		filler = append(filler, f)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: ts.sock}); err != nil {
		release()
		t.Fatal(err)
	}
	// The connection waits in the backlog while accept fails.
	deadline := time.Now().Add(10 * time.Second)
	for ts.l.Stats().AcceptRetries < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	retries := ts.l.Stats().AcceptRetries
	waiting := ts.l.Stats().Open == 0
	release()
	if retries < 5 {
		t.Fatalf("accept retried %d times while out of descriptors, want it to keep retrying", retries)
	}
	select {
	case err := <-ts.done:
		t.Fatalf("Serve returned while out of descriptors: %v", err)
	default:
	}
	return ts, fd, waiting
}

// checkServedAfterStarving: the client that waited while accept failed is
// served once descriptors are back, and the starving and the recovery are
// each logged once.
func checkServedAfterStarving(t *testing.T, ts *testServer, fd int) {
	if _, err := unix.Write(fd, []byte("GET /v1/health HTTP/1.1\r\nHost: sessiond\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Read through the descriptor itself: an *os.File of it would close it
	// again when collected, by then another test's descriptor.
	resp, err := http.ReadResponse(bufio.NewReader(fdReader(fd)), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the descriptors came back: status %d, want 200", resp.StatusCode)
	}
	if n := ts.logs.FilterMessage("cannot accept API connections: out of descriptors; retrying until some are freed").Len(); n != 1 {
		t.Errorf("out-of-descriptors logged %d times over %d retries, want once", n, ts.l.Stats().AcceptRetries)
	}
	if n := ts.logs.FilterMessage("accepting API connections again").Len(); n != 1 {
		t.Errorf("recovery logged %d times, want once", n)
		for _, e := range ts.logs.All() {
			t.Logf("the listener logged: %s %v", e.Message, e.ContextMap())
		}
	}
}

// fdReader reads a descriptor it does not own.
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	n, err := unix.Read(int(r), p)
	if n < 0 {
		n = 0
	}
	if err == nil && n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, err
}

// TestStreamsOutliveTimeouts: a stream that writes now and then, with
// quiet gaps longer than every timeout, is never cut; a POST whose body
// was read promptly may stream as long.
func TestStreamsOutliveTimeouts(t *testing.T) {
	tmo := Timeouts{ReadHeader: 100 * time.Millisecond, Idle: 150 * time.Millisecond, BodyRead: 150 * time.Millisecond, StreamWrite: 200 * time.Millisecond}
	stream := func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
		}
		s := tmo.Stream(w)
		for i := 0; i < 6; i++ {
			if _, err := fmt.Fprintf(s, "line %d\n", i); err != nil {
				return
			}
			gap := 100 * time.Millisecond
			if i == 2 {
				gap = 700 * time.Millisecond // longer than every timeout
			}
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				fmt.Fprintf(s, "canceled\n")
				return
			}
		}
	}
	ts := startServer(t, Limits{}, tmo, map[string]http.HandlerFunc{"GET /stream": stream, "POST /stream": stream})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", ts.sock)
	}}}
	defer hc.CloseIdleConnections()
	for _, method := range []string{"GET", "POST"} {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(`{"follow":true}`)
		}
		req, _ := http.NewRequest(method, "http://sessiond/stream", body)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: reading the stream: %v", method, err)
		}
		if want := "line 0\nline 1\nline 2\nline 3\nline 4\nline 5\n"; string(data) != want {
			t.Errorf("%s: stream %q, want %q", method, data, want)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("%s: the stream took %v, want over a second (longer than every timeout)", method, d)
		}
	}
}

// TestStalledReaderIsCut: a stream whose reader stops reading ends once a
// write has waited StreamWrite, and its connection is freed.
func TestStalledReaderIsCut(t *testing.T) {
	tmo := DefaultTimeouts()
	tmo.StreamWrite = 300 * time.Millisecond
	ended := make(chan error, 1)
	ts := startServer(t, Limits{}, tmo, map[string]http.HandlerFunc{"GET /flood": func(w http.ResponseWriter, r *http.Request) {
		s := tmo.Stream(w)
		chunk := make([]byte, 64<<10)
		for {
			if _, err := s.Write(chunk); err != nil {
				ended <- err
				return
			}
		}
	}})
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /flood HTTP/1.1\r\nHost: sessiond\r\n\r\n")
	// Read nothing.
	select {
	case err := <-ended:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stalled stream ended with %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stream nobody reads was not cut")
	}
	waitFor(t, 5*time.Second, "the connection freed", func() bool { return ts.l.Stats().Open == 0 })
}

// TestSlowBodyIsCut: a body that trickles in slower than BodyRead fails
// the handler's read.
func TestSlowBodyIsCut(t *testing.T) {
	tmo := DefaultTimeouts()
	tmo.BodyRead = 300 * time.Millisecond
	got := make(chan error, 1)
	ts := startServer(t, Limits{}, tmo, map[string]http.HandlerFunc{"POST /v1/sessions": func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
		}
	}})
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /v1/sessions HTTP/1.1\r\nHost: sessiond\r\nContent-Length: 100\r\n\r\n{")
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < 50; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	select {
	case err := <-got:
		if err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("slow body read ended with %v after %v, want a timeout after about %v", err, time.Since(start), tmo.BodyRead)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a trickling body was read for 5 s")
	}
}

func TestDefaults(t *testing.T) {
	l := NewListener(nil, Limits{}, nil, nil)
	if l.lim.Total != DefaultMaxConns || l.lim.PerUID != DefaultMaxConnsPerUID {
		t.Errorf("zero Limits became %+v, want the defaults", l.lim)
	}
	var s http.Server
	s.WriteTimeout, s.ReadTimeout = time.Second, time.Second
	DefaultTimeouts().Apply(&s)
	if s.ReadHeaderTimeout != ReadHeaderTimeout || s.IdleTimeout != IdleTimeout || s.WriteTimeout != 0 || s.ReadTimeout != 0 || s.MaxHeaderBytes != MaxHeaderBytes {
		t.Errorf("Apply left %v %v %v %v %v", s.ReadHeaderTimeout, s.IdleTimeout, s.WriteTimeout, s.ReadTimeout, s.MaxHeaderBytes)
	}
	if _, ok := PeerOf(&net.UnixConn{}); ok {
		t.Error("PeerOf found a peer on a connection no Listener accepted")
	}
}

// TestTrustedUIDsSkipThePerUserCap: root and the daemon's own user are
// bounded by the total only.
func TestTrustedUIDsSkipThePerUserCap(t *testing.T) {
	l := NewListener(nil, Limits{Total: 5, PerUID: 2, Trusted: []int{0}}, nil, nil)
	for i := range 4 {
		if why := l.admit(0); why != "" {
			t.Fatalf("root's connection %d refused: %s", i+1, why)
		}
	}
	if why := l.admit(1000); why != "" {
		t.Fatalf("a user's first connection refused: %s", why)
	}
	if why := l.admit(1000); why == "" || !strings.Contains(why, "the daemon has 5") {
		t.Errorf("over the total: %q, want the total's refusal", why)
	}
	l.release(0)
	if why := l.admit(1000); why != "" {
		t.Fatalf("a user's second connection refused: %s", why)
	}
	if why := l.admit(1000); why == "" || !strings.Contains(why, "uid 1000 has 2") {
		t.Errorf("a user's third connection: %q, want the per-user refusal", why)
	}
}
