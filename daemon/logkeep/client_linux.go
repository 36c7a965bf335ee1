package logkeep

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/proc"
)

// Supported says whether this platform has the keeper: elsewhere, the
// child writes its log itself.
const Supported = true

// pipeSize is what a session's pipe holds (the unprivileged maximum of
// Linux's default fs.pipe-max-size): the child writes on while the keeper
// moves the last batch.
const pipeSize = 1 << 20

// Options say where the keeper listens and how one is started.
type Options struct {
	// Socket is the keeper's socket, in the daemon's state dir.
	Socket string
	// Executable is the sessiond binary: the keeper is sessiond-logkeeper
	// where proc.Libexec finds it for it, else `sessiond logkeeper`.
	Executable string
	// Diag receives the keeper's own log (its stderr).
	Diag   string
	Logger *zap.Logger
}

// Client is the daemon's side of the keeper: it makes each session's
// pipe, hands its read end and its log to the keeper and keeps a
// duplicate of the read end, so that a keeper that dies is replaced with
// every pipe handed over again and no writer sees EPIPE.
type Client struct {
	opt Options
	log *zap.Logger

	// mu orders requests (one at a time, each with its reply) and guards
	// the connection and pipes.
	mu      sync.Mutex
	conn    *net.UnixConn
	replies chan replyOrErr
	pipes   map[string]*held
	closed  bool

	// side holds idle side connections: drains and releases go on them,
	// several at once, rather than one after the other on conn (a
	// thousand sessions ending together waited for each other's drain).
	// sideSlots bounds how many there are.
	side      chan *net.UnixConn
	sideSlots chan struct{}

	// releases gathers the releases asked while one is on its way.
	releases batcher
}

// sideConns bounds the side connections: enough that ends overlap on two
// cores, few enough to be nothing to the keeper.
const sideConns = 8

type held struct {
	fd   int // the daemon's duplicate of the pipe's read end
	max  int64
	keep int
}

type replyOrErr struct {
	r   reply
	fds []int
	err error
}

// Connect returns the client of the keeper at opt.Socket. A keeper left
// by an earlier daemon is taken over at once (its rotation handed back,
// its pipes listed); none is started until the first Attach.
func Connect(opt Options) (*Client, error) {
	c := &Client{opt: opt, log: opt.Logger, pipes: map[string]*held{},
		side: make(chan *net.UnixConn, sideConns), sideSlots: make(chan struct{}, sideConns)}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.dialLocked(); err != nil && !notRunning(err) {
		return nil, err
	}
	return c, nil
}

func notRunning(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// dialLocked connects to a running keeper and says hello; the pipes it
// lists become the client's.
func (c *Client) dialLocked() error {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: c.opt.Socket, Net: "unixpacket"})
	if err != nil {
		return err
	}
	if err := ownUser(conn); err != nil {
		conn.Close()
		return err
	}
	if err := send(conn, request{Op: "hello"}); err != nil {
		conn.Close()
		return fmt.Errorf("log keeper hello: %w", err)
	}
	for {
		var r reply
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		fds, err := receive(conn, &r)
		if err != nil {
			conn.Close()
			return fmt.Errorf("log keeper hello: %w", err)
		}
		if len(fds) != len(r.Paths) {
			closeFDs(fds)
			conn.Close()
			return fmt.Errorf("log keeper hello: %d pipes for %d logs", len(fds), len(r.Paths))
		}
		for i, p := range r.Paths {
			if old := c.pipes[p]; old != nil {
				_ = unix.Close(old.fd)
			}
			// Cap and keep are the daemon's own; they come with the next
			// re-add, which only a keeper's death needs.
			c.pipes[p] = &held{fd: fds[i], max: -1}
		}
		if !r.More {
			break
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	c.conn = conn
	c.replies = make(chan replyOrErr, 1)
	go c.read(conn, c.replies)
	return nil
}

// read delivers the replies of conn; its end (the keeper died) starts a
// new keeper, which gets every pipe again.
func (c *Client) read(conn *net.UnixConn, replies chan<- replyOrErr) {
	for {
		var r reply
		fds, err := receive(conn, &r)
		if err != nil {
			replies <- replyOrErr{err: err}
			close(replies)
			c.lost(conn)
			return
		}
		replies <- replyOrErr{r: r, fds: fds}
	}
}

// lost replaces a keeper that went away (conn nil: tries again after a
// replacement that failed).
func (c *Client) lost(conn *net.UnixConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != conn || c.closed {
		return
	}
	if conn != nil {
		conn.Close()
	}
	c.conn = nil
	if len(c.pipes) == 0 {
		return
	}
	c.log.Warn("the log keeper went away; starting a new one", zap.Int("pipes", len(c.pipes)))
	if err := c.ensureLocked(); err != nil {
		c.log.Error("no log keeper: sessions' output waits in their pipes; trying again in a second", zap.Error(err))
		time.AfterFunc(time.Second, func() { c.lost(nil) })
	}
}

// ensureLocked makes sure a keeper is connected, starting one if none
// runs, and hands it every pipe it does not hold.
func (c *Client) ensureLocked() error {
	if c.conn != nil {
		return nil
	}
	known := make(map[string]*held, len(c.pipes))
	for p, h := range c.pipes {
		known[p] = h
	}
	// A keeper that is dying (its socket still there, or its listener
	// still open) refuses or drops the dial: a new one starts, and the
	// dial is tried again for a moment.
	var err error
	spawned := false
	for try := 0; try < 40; try++ {
		if err = c.dialLocked(); err == nil {
			break
		}
		if !spawned && (notRunning(err) || try >= 2) {
			if serr := c.spawn(); serr != nil {
				return serr
			}
			spawned = true
			continue
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	for p, h := range known {
		if got := c.pipes[p]; got != nil && got != h {
			// The keeper has it (a race with its own start): one
			// duplicate is enough.
			_ = unix.Close(h.fd)
			got.max, got.keep = h.max, h.keep
			continue
		}
		c.pipes[p] = h
		if err := c.readdLocked(p, h); err != nil {
			c.log.Error("hand a session's pipe to the new log keeper", zap.String("path", p), zap.Error(err))
		}
	}
	return nil
}

func (c *Client) readdLocked(path string, h *held) error {
	out, err := logfile.OpenAppend(path)
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = c.requestLocked(request{Op: "add", Path: path, Max: h.max, Keep: h.keep}, h.fd, int(out.Fd()))
	return err
}

// spawn starts a keeper, in a session of its own, and waits for it to
// listen.
func (c *Client) spawn() error {
	diag, err := os.OpenFile(c.opt.Diag, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("start the log keeper: %w", err)
	}
	defer diag.Close()
	cmd := exec.Command(c.opt.Executable, "logkeeper", "--socket", c.opt.Socket)
	if path, ok := proc.Libexec(c.opt.Executable, KeeperName); ok {
		cmd = exec.Command(path, "--socket", c.opt.Socket)
	}
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.Stderr = diag
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("start the log keeper: %w", err)
	}
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("start the log keeper %s: %w", cmd.Path, err)
	}
	go func() { _ = proc.Wait(cmd) }()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("it said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("start the log keeper: %w (its log: %s)", err, c.opt.Diag)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("start the log keeper: not ready in 10s (its log: %s)", c.opt.Diag)
	}
}

// requestLocked sends req (with fds) and waits for its reply.
func (c *Client) requestLocked(req request, fds ...int) (reply, error) {
	if c.conn == nil {
		return reply{}, errors.New("no log keeper")
	}
	if err := send(c.conn, req, fds...); err != nil {
		return reply{}, fmt.Errorf("log keeper %s: %w", req.Op, err)
	}
	r, ok := <-c.replies
	if !ok || r.err != nil {
		return reply{}, fmt.Errorf("log keeper %s: no reply: %v", req.Op, r.err)
	}
	closeFDs(r.fds)
	if r.r.Error != "" {
		return reply{}, errors.New(r.r.Error)
	}
	return r.r, nil
}

// Attach makes the pipe a session's command writes its output to: the
// keeper moves it into the log (out, opened with logfile.OpenAppend) at
// path, within maxSize × keep plus one chunk. The caller passes the
// returned write end to the child and closes it.
func (c *Client) Attach(path string, out *os.File, maxSize int64, keep int) (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("log keeper client closed")
	}
	if err := c.ensureLocked(); err != nil {
		return nil, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("session output pipe: %w", err)
	}
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize)
	if _, err := c.requestLocked(request{Op: "add", Path: path, Max: maxSize, Keep: keep}, p[0], int(out.Fd())); err != nil {
		closeFDs(p[:])
		return nil, err
	}
	if old := c.pipes[path]; old != nil {
		_ = unix.Close(old.fd)
	}
	c.pipes[path] = &held{fd: p[0], max: maxSize, keep: keep}
	return os.NewFile(uintptr(p[1]), "output"), nil
}

// Adopt gives the cap of a pipe the keeper held before this daemon (its
// hello listed it), for a re-add after a keeper's death; it reports
// whether the keeper holds a pipe for path.
func (c *Client) Adopt(path string, maxSize int64, keep int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.pipes[path]
	if h == nil {
		return false
	}
	h.max, h.keep = maxSize, keep
	return true
}

// Holds reports whether the keeper carries the log at path.
func (c *Client) Holds(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pipes[path] != nil
}

// Drain returns once what the pipe of path held is in its log (bounded:
// a log that cannot take it is left after a few seconds without progress).
func (c *Client) Drain(path string) {
	c.do("drain", path)
}

// Release drains the pipe of path into its log and lets it go: the
// session is over. The releases asked while one is on its way go together
// in the next request: the sessions of a stop --all of a thousand end in
// a few dozen round trips to the keeper, not a thousand.
func (c *Client) Release(path string) {
	c.mu.Lock()
	held := c.pipes[path] != nil && c.conn != nil
	c.mu.Unlock()
	if held {
		c.releases.do(path, c.releaseAll)
	}
	c.mu.Lock()
	if h := c.pipes[path]; h != nil {
		_ = unix.Close(h.fd)
		delete(c.pipes, path)
	}
	c.mu.Unlock()
}

// releaseAll releases the pipes of paths in one request on a side
// connection; the keeper answers for each as its drain ends, so that a log
// slow to take its rest holds up none of the others. What it could not
// release so (no side connection, one that broke, a keeper started by an
// earlier sessiond that does not know the request) is released one at a
// time.
func (c *Client) releaseAll(paths []string, answered func(i int)) {
	left := make(map[string]int, len(paths))
	for i, p := range paths {
		left[p] = i
	}
	if len(paths) > 1 {
		if conn, ok := c.sideConn(); ok {
			broken := c.releaseOn(conn, paths, left, answered)
			c.putSide(conn, broken)
		}
	}
	for i, p := range paths {
		if _, ok := left[p]; ok {
			c.do("release", p)
			answered(i)
		}
	}
}

// releaseOn asks the keeper on conn to release paths, and takes from left
// those it answers for; it reports whether conn broke.
func (c *Client) releaseOn(conn *net.UnixConn, paths []string, left map[string]int, answered func(i int)) (broken bool) {
	if err := send(conn, request{Op: "release-all", Paths: paths}); err != nil {
		return true
	}
	for len(left) > 0 {
		_ = conn.SetReadDeadline(time.Now().Add(sideTimeout))
		var r reply
		fds, err := receive(conn, &r)
		closeFDs(fds)
		if err != nil {
			return true
		}
		if r.Error != "" {
			c.log.Debug("log keeper: releasing one at a time", zap.String("error", r.Error))
			return false
		}
		for _, p := range r.Paths {
			if i, ok := left[p]; ok {
				delete(left, p)
				answered(i)
			}
		}
		if !r.More {
			return false
		}
	}
	return false
}

func (c *Client) do(op, path string) {
	c.mu.Lock()
	if c.pipes[path] == nil || c.conn == nil {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if r, ok := c.doSide(request{Op: op, Path: path}); ok {
		if r.Error != "" {
			c.log.Warn("log keeper", zap.String("op", op), zap.String("path", path), zap.String("error", r.Error))
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pipes[path] == nil || c.conn == nil {
		return
	}
	if _, err := c.requestLocked(request{Op: op, Path: path}); err != nil {
		c.log.Warn("log keeper", zap.String("op", op), zap.String("path", path), zap.Error(err))
	}
}

// doSide sends req on a side connection and returns the reply; false
// means it could not (no keeper to dial, a connection that broke), and
// the caller asks on the main connection, which replaces a keeper that
// went away. The keeper serves every connection of its user, each in
// turn, and the streams of different logs apart.
func (c *Client) doSide(req request) (reply, bool) {
	conn, ok := c.sideConn()
	if !ok {
		return reply{}, false
	}
	var r reply
	err := send(conn, req)
	if err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(sideTimeout))
		var fds []int
		fds, err = receive(conn, &r)
		closeFDs(fds)
	}
	c.putSide(conn, err != nil)
	return r, err == nil
}

// sideConn is an idle side connection, or a new one while there are
// fewer than sideConns; false when none can be dialled.
func (c *Client) sideConn() (*net.UnixConn, bool) {
	select {
	case conn := <-c.side:
		return conn, true
	case c.sideSlots <- struct{}{}:
		conn, err := c.dialSide()
		if err != nil {
			<-c.sideSlots
			return nil, false
		}
		return conn, true
	}
}

// putSide gives back a side connection for the next request, or closes
// it: it broke, or the client is closed.
func (c *Client) putSide(conn *net.UnixConn, broken bool) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if broken || closed {
		conn.Close()
		<-c.sideSlots
		return
	}
	c.side <- conn
}

// sideTimeout bounds a side request: a drain is bounded by the keeper
// (drainMax), a keeper that does not answer at all is left to the main
// connection.
const sideTimeout = drainMax + 30*time.Second

// dialSide connects to the keeper without a hello: the connection is not
// the daemon's (the main one is), only a way to ask.
func (c *Client) dialSide() (*net.UnixConn, error) {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: c.opt.Socket, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	if err := ownUser(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Close disconnects: the keeper rotates the logs it still carries itself
// until the next daemon connects, and leaves once it carries none.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	for {
		select {
		case conn := <-c.side:
			conn.Close()
			<-c.sideSlots
			continue
		default:
		}
		break
	}
	for _, h := range c.pipes {
		_ = unix.Close(h.fd)
	}
	c.pipes = map[string]*held{}
}
