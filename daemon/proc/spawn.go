package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
)

// Spec says how to start a session's process.
type Spec struct {
	Argv []string
	// Path is Argv[0] already looked up (state.Files.LookPath, with the
	// user's rights); "" looks it up here, with the daemon's.
	Path string
	Dir  string
	Env  []string
	// Output receives the child's stdout and stderr directly.
	Output *os.File
	// Credential, when set, runs the child as another user (root daemon only).
	Credential *syscall.Credential
	// Cgroup, when set, is the session's cgroup: the child is born in its
	// Leaf (cgroupfs.LeafCommand when empty).
	Cgroup *cgroupfs.Group
	Leaf   string
}

// Exit is how a process ended.
type Exit struct {
	// Code is the exit code, or -1 when a signal killed the process.
	Code int
	// Signal is the name of the signal that killed it, if any.
	Signal string
}

// Child is a spawned session process, the leader of its own process group.
type Child struct {
	PID int
	// StartTime is the process's start time in clock ticks after boot
	// (0 where the platform does not tell), which tells it from a later
	// process that reuses its pid.
	StartTime uint64
	// Ino is as Process.Ino.
	Ino uint64

	// own says the daemon spawned it: until reaped, its pid is the
	// daemon's to signal.
	own bool

	done chan struct{}
	exit Exit

	// mu guards exited and onExit: the hook OnExit set, called once the
	// process has exited.
	mu     sync.Mutex
	exited bool
	onExit func()
}

// Done is closed once the process has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// OnExit has f called once the process has exited and Done is closed: at
// once if it has already. It replaces an earlier f; f must not block.
func (c *Child) OnExit(f func()) {
	c.mu.Lock()
	if c.exited {
		c.mu.Unlock()
		f()
		return
	}
	c.onExit = f
	c.mu.Unlock()
}

// finish closes Done, with exit already set, and calls the OnExit hook.
func (c *Child) finish() {
	close(c.done)
	c.mu.Lock()
	c.exited = true
	f := c.onExit
	c.onExit = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// Exit returns how the process ended; valid once Done is closed.
func (c *Child) Exit() Exit { return c.exit }

// children are the session processes the reaper delivers exit statuses
// for. A child is reaped (its pid freed) only under mu held for writing,
// and signalled only under mu held, for reading: a pid in m is never one
// the kernel has given to another process. Signals do not wait for each
// other (a thousand stops at once).
var children = struct {
	mu sync.RWMutex
	m  map[int]*Child
}{m: make(map[int]*Child)}

// ErrNotFound means the command could not be found or is not executable.
var ErrNotFound = errors.New("command not found")

// LookPath finds argv0 as the child would: a name with a slash is taken
// relative to dir, any other name is searched in the PATH of env.
func LookPath(argv0, dir string, env []string) (string, error) {
	if argv0 == "" {
		return "", fmt.Errorf("empty command: %w", ErrNotFound)
	}
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s: %w", argv0, err)
		}
		return p, nil
	}
	path := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, argv0)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH: %w", argv0, ErrNotFound)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%w: is a directory", ErrNotFound)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: not executable", ErrNotFound)
	}
	return nil
}

// Spawn starts a session's process in a new process group, stdin from
// /dev/null and output to spec.Output. Its exit is reaped by the reaper and
// reported through the Child.
func Spawn(spec Spec) (*Child, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("empty command: %w", ErrNotFound)
	}
	path := spec.Path
	if path == "" {
		var err error
		if path, err = LookPath(spec.Argv[0], spec.Dir, spec.Env); err != nil {
			return nil, err
		}
	}
	startReaper()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	attr := &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []*os.File{devnull, spec.Output, spec.Output},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Credential: spec.Credential},
	}
	// Hold the helpers lock for reading so the reaper cannot see the child
	// exit before it is registered and mistake it for an orphan.
	helpers.mu.RLock()
	var pid int
	// A command that enters v1 cgroups is forked by a thread that entered
	// them first; any other by the spawner.
	delegate := spec.Cgroup == nil || !spec.Cgroup.EntersByThread()
	err = InCgroup(spec.Cgroup, spec.Leaf, attr.Sys, func() (err error) {
		pid, err = startProcess(path, spec.Argv, attr, delegate)
		return err
	})
	if err != nil {
		helpers.mu.RUnlock()
		return nil, fmt.Errorf("start %s: %w", spec.Argv[0], err)
	}
	c := &Child{PID: pid, own: true, done: make(chan struct{})}
	children.mu.Lock()
	children.m[c.PID] = c
	children.mu.Unlock()
	helpers.mu.RUnlock()
	if p, err := Identify(c.PID); err == nil {
		c.StartTime, c.Ino = p.Start, p.Ino
	}
	return c, nil
}

// forkHere has every command forked by its caller (benchmarks, for the
// figure without the spawner).
var forkHere bool

// startProcess starts a command and returns its pid: on the spawner's
// thread where there is one and delegate allows it, else from the calling
// thread. The reaper collects its status with wait4, so no handle is kept.
func startProcess(path string, argv []string, attr *os.ProcAttr, delegate bool) (int, error) {
	if s := spawnerFor(); s != nil && delegate && !forkHere {
		sys := syscall.ProcAttr{Dir: attr.Dir, Env: attr.Env, Sys: attr.Sys}
		if sys.Env == nil {
			sys.Env = syscall.Environ()
		}
		for _, f := range attr.Files {
			// Fd puts the descriptor in blocking mode, as os.StartProcess
			// does: the child gets the file as a program expects it.
			sys.Files = append(sys.Files, f.Fd())
		}
		pid, off, err := s.forkExec(path, argv, &sys)
		runtime.KeepAlive(attr.Files)
		if !off {
			if err != nil {
				return 0, &os.PathError{Op: "fork/exec", Path: path, Err: err}
			}
			return pid, nil
		}
	}
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return 0, err
	}
	pid := p.Pid
	_ = p.Release()
	return pid, nil
}

// CancelGroup is a Cancel for a helper command started with Setpgid (and
// Start): it kills the command's process group. exec.Cmd calls it before
// Wait reaps the command, so the group is still the command's.
func CancelGroup(cmd *exec.Cmd) func() error {
	return func() error {
		if cmd.Process == nil || refuse(cmd.Process.Pid) != nil {
			return nil
		}
		return ignoreESRCH(unix.Kill(-cmd.Process.Pid, unix.SIGKILL))
	}
}

func ignoreESRCH(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// exitOf converts a wait status.
func exitOf(ws unix.WaitStatus) Exit {
	if ws.Signaled() {
		return Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return Exit{Code: ws.ExitStatus()}
}

// Gone returns a Child for a process that has already ended unobserved:
// Done is closed and the exit status is unknown.
func Gone(pid int) *Child {
	c := &Child{PID: pid, done: make(chan struct{}), exit: Exit{Code: -1}}
	c.finish()
	return c
}
