package ipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A remote host is reached the way docker reaches one (DOCKER_HOST=ssh://):
// the system's OpenSSH runs `sessionctl dial-stdio` on the other side, which
// joins its standard input and output to that host's daemon socket, and the
// API goes through as it does locally. The user's ~/.ssh/config, keys,
// agent, ProxyJump and known_hosts apply; the other daemon sees the SSH
// user as its caller, with that user's rights.

// Remote is a host given as ssh://[user@]host[:port][/socket]: the socket
// of the daemon there ("" its default, as sessionctl finds it there).
type Remote struct {
	URL    string
	User   string
	Host   string
	Port   string
	Socket string
	// Sessionctl is the command run on the other side ("sessionctl", found
	// on its PATH; ?sessionctl=PATH in the URL names another).
	Sessionctl string
}

// ParseHost reads a host URL: ssh://[user@]host[:port][/socket][?sessionctl=PATH].
func ParseHost(s string) (*Remote, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("host %q: want ssh://[user@]host[:port]", s)
	}
	if u.Scheme != "ssh" {
		return nil, fmt.Errorf("host %q: only ssh:// hosts are reached (sessiond needs no network listener of its own: SSH carries the API)", s)
	}
	if u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "-") {
		return nil, fmt.Errorf("host %q: no host name", s)
	}
	r := &Remote{URL: s, Host: u.Hostname(), Port: u.Port(), Socket: u.Path, Sessionctl: "sessionctl"}
	if r.Port != "" {
		if n, err := strconv.Atoi(r.Port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("host %q: port %q is not a number from 1 to 65535", s, r.Port)
		}
	}
	for k := range u.Query() {
		if k != "sessionctl" {
			return nil, fmt.Errorf("host %q: unknown parameter %q (only ?sessionctl=PATH is read)", s, k)
		}
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("host %q: a host URL has no #fragment", s)
	}
	if u.User != nil {
		r.User = u.User.Username()
		if _, has := u.User.Password(); has {
			return nil, fmt.Errorf("host %q: no password in the URL; SSH's keys and agent authenticate", s)
		}
		if strings.HasPrefix(r.User, "-") {
			return nil, fmt.Errorf("host %q: bad user name", s)
		}
	}
	if r.Socket == "/" {
		r.Socket = ""
	}
	if p := u.Query().Get("sessionctl"); p != "" {
		r.Sessionctl = p
	}
	for _, v := range []string{r.Socket, r.Sessionctl} {
		if strings.ContainsAny(v, " \t\n'\"\\$`;&|<>(){}*?!#~") {
			return nil, fmt.Errorf("host %q: %q may not hold spaces or shell characters", s, v)
		}
	}
	return r, nil
}

// SSHCommandEnv names the environment variable that replaces "ssh" (and
// options before the host), as GIT_SSH_COMMAND does for git: split on
// spaces, no shell.
const SSHCommandEnv = "SESSIOND_SSH_COMMAND"

// dialBanner is the first line `sessionctl dial-stdio` writes: it reached
// the daemon's socket (ok), or why not (error: ...).
const dialBanner = "sessiond-dial-stdio/1 "

// DialStdioBanner is the line dial-stdio writes once the socket answers,
// or with err, the line that says why it did not.
func DialStdioBanner(err error) string {
	if err != nil {
		return dialBanner + "error: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
	}
	return dialBanner + "ok\n"
}

// argv is the ssh command line that runs dial-stdio there.
func (r *Remote) argv() []string {
	cmd := []string{"ssh"}
	if v := strings.Fields(os.Getenv(SSHCommandEnv)); len(v) > 0 {
		cmd = v
	}
	cmd = append(cmd, "-T", "-o", "ConnectTimeout=10")
	if r.Port != "" {
		cmd = append(cmd, "-p", r.Port)
	}
	if r.User != "" {
		cmd = append(cmd, "-l", r.User)
	}
	cmd = append(cmd, "--", r.Host, r.Sessionctl)
	if r.Socket != "" {
		cmd = append(cmd, "--socket", r.Socket)
	}
	return append(cmd, "dial-stdio")
}

// Dial runs ssh to the host and returns the connection to its daemon,
// once dial-stdio there said it reached the socket. A host that is down,
// refuses, or has no daemon running is an *UnreachableError whose message
// is what ssh or dial-stdio said.
func (r *Remote) Dial(ctx context.Context) (net.Conn, error) {
	argv := r.argv()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout = inR, outW
	stderr := &lastLines{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, &UnreachableError{Socket: r.URL, Err: fmt.Errorf("run %s: %w", argv[0], err)}
	}
	inR.Close()
	outW.Close()
	c := &sshConn{url: r.URL, cmd: cmd, in: inW, out: outR, stderr: stderr}
	c.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()

	// The banner, within the dial's time.
	deadline := time.Now().Add(30 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = outR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = outR.SetReadDeadline(time.Now()) })
	line, err := readLine(outR, 4096)
	stop()
	_ = outR.SetReadDeadline(time.Time{})
	if err == nil && line == strings.TrimSuffix(DialStdioBanner(nil), "\n") {
		stderr.mark()
		return c, nil
	}
	// A dial that failed: nothing to finish, and ssh may be stuck in a
	// connect that its own timeout ends much later.
	_ = cmd.Process.Kill()
	c.Close()
	<-c.exited
	switch {
	case err == nil && strings.HasPrefix(line, dialBanner+"error: "):
		err = errors.New(strings.TrimPrefix(line, dialBanner+"error: "))
	case err == nil:
		err = fmt.Errorf("%s on %s did not answer as sessionctl dial-stdio does (%q): is sessionctl installed there? (?sessionctl=PATH in the URL names it)", r.Sessionctl, r.Host, cutLine(line))
	case ctx.Err() != nil:
		err = ctx.Err()
	default:
		if why := stderr.last(); why != "" {
			err = errors.New(why)
		} else {
			err = fmt.Errorf("ssh ended before the daemon answered (%v)", err)
		}
	}
	return nil, &UnreachableError{Socket: r.URL, Err: err, Remote: true}
}

// readLine reads one line, a byte at a time, so that nothing after it is
// taken from the connection.
func readLine(f *os.File, max int) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < max {
		n, err := f.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return string(b), nil
			}
			b = append(b, one[0])
			continue
		}
		if err != nil {
			return string(b), err
		}
	}
	return string(b), errors.New("line too long")
}

func cutLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// sshConn is the connection to a daemon through ssh's standard input and
// output.
type sshConn struct {
	url    string
	cmd    *exec.Cmd
	in     *os.File
	out    *os.File
	stderr *lastLines
	exited chan struct{}
	once   sync.Once
}

func (c *sshConn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *sshConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// CloseWrite ends what goes to the daemon; its answer still comes.
func (c *sshConn) CloseWrite() error { return c.in.Close() }

func (c *sshConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.out.Close()
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
			_ = c.cmd.Process.Kill()
		}
	})
	return nil
}

// cut turns a failed read or write of the daemon's answer into one that
// names the host and says why the connection ended, as ssh said it (a
// network gone, the other side's sshd or daemon stopped), once ssh has
// exited or a second has passed.
func (c *sshConn) cut(err error) error {
	select {
	case <-c.exited:
	case <-time.After(time.Second):
	}
	why := c.stderr.last()
	if why == "" {
		why = "ssh ended"
		if st := c.cmd.ProcessState; st != nil && !st.Success() {
			why = "ssh ended: " + st.String()
		}
	}
	return &CutError{Host: c.url, Why: why, Err: err}
}

// CutError is a connection to a host's daemon through SSH that ended
// before the daemon's answer did.
type CutError struct {
	Host string
	Why  string
	Err  error
}

func (e *CutError) Error() string {
	return fmt.Sprintf("the connection to sessiond on %s ended: %s", e.Host, e.Why)
}

func (e *CutError) Unwrap() error { return e.Err }

// ended says whether ssh has exited: the daemon's end closed, and a
// request written now would get no answer.
func (c *sshConn) ended() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("local") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(strings.Join(c.cmd.Args, " ")) }
func (c *sshConn) SetDeadline(t time.Time) error {
	return errors.Join(c.in.SetWriteDeadline(t), c.out.SetReadDeadline(t))
}
func (c *sshConn) SetReadDeadline(t time.Time) error  { return c.out.SetReadDeadline(t) }
func (c *sshConn) SetWriteDeadline(t time.Time) error { return c.in.SetWriteDeadline(t) }

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

// lastLines keeps the end of what ssh wrote on its standard error.
type lastLines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int64 // bytes written before buf's first
	from    int64 // what last reads from: the bytes after a mark
}

func (l *lastLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.buf.Len() > 8192 {
		cut := l.buf.Len() - 4096
		l.dropped += int64(cut)
		b := l.buf.Bytes()[cut:]
		l.buf.Reset()
		l.buf.Write(b)
	}
	return len(p), nil
}

// mark makes last read only what is written from now on: what ssh says
// once the connection is up (a login's notices before are not why it
// ended).
func (l *lastLines) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = l.dropped + int64(l.buf.Len())
}

// last is the last line ssh wrote that says something.
func (l *lastLines) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf.Bytes()
	if skip := l.from - l.dropped; skip > 0 {
		b = b[min(skip, int64(len(b))):]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var last string
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return TerminalLine(last)
}
