//go:build ignore

// startfloor is the floor of a durable start on this machine: what one
// `sessionctl start` cannot do without, with nothing else around it.
// bench/ps.sh runs N of them in the loop its sequential starts run in.
//
//	go build -o startfloor bench/startfloor.go
//	startfloor serve -sock SOCK -dir DIR [-sleep /bin/sleep] &
//	startfloor start -sock SOCK PROJECT    # one start, as a client: prints the child's pid
//	startfloor stop -sock SOCK             # the children killed, the server gone: "stopped cgroups N"
//
// A start is a client process, built as sessionctl is, that connects to the
// server's Unix socket, sends the project's directory and waits for the
// answer; the server, one request at a time, forks and executes the command
// (`sleep 100000`, in a process group of its own, in the project's
// directory) and waits until the exec has happened, makes the session's
// directory and writes its record there (as large as the daemon's), makes
// both durable with one sync of the file system, and answers with the
// child's pid. That is a durable start: a reply means the command runs and
// its record is on disk. There is no configuration, no lookup, no cgroup,
// no log, no event and no environment around it, and the client uses raw
// system calls (no package net, no flags): its start-up is the hello
// world's.
//
// With -design the server also makes, at each start, what DESIGN.md §4
// has a start make, each the cheapest way there is and nothing else: the
// session's log (empty) and its environment file beside the record, the
// project's .sessiond directory, its context.md (a temporary file renamed
// into place, not synced), a cgroup v2 directory of the session's own that
// the command is forked into (where a v2 hierarchy here takes one: "cgroups
// 1" in the stop's answer), and, once the start is answered, the project's
// lock (session.lock, written as context.md is). The command gets the
// server's environment, as a session gets its caller's, and its output goes
// to the log. The sync is still one for all.
//
//	startfloor serve -sock SOCK -dir DIR -design &
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	// The arguments are read by hand: a client's start-up is the hello
	// world's and the packages it initialises.
	args := os.Args[1:]
	opt := map[string]string{"-sleep": "/bin/sleep"}
	var rest []string
	design := false
	for i := 1; i < len(args); i++ {
		if args[i] == "-design" {
			design = true
			continue
		}
		if _, ok := map[string]bool{"-sock": true, "-dir": true, "-sleep": true}[args[i]]; ok && i+1 < len(args) {
			opt[args[i]] = args[i+1]
			i++
			continue
		}
		rest = append(rest, args[i])
	}
	if len(args) == 0 || opt["-sock"] == "" {
		usage()
	}
	var err error
	switch args[0] {
	case "serve":
		if opt["-dir"] == "" || len(rest) != 0 {
			usage()
		}
		err = serve(opt["-sock"], opt["-dir"], opt["-sleep"], design)
	case "start":
		if len(rest) != 1 {
			usage()
		}
		// The child's pid, as sessionctl start -q prints the session's id.
		var pid string
		if pid, err = ask(opt["-sock"], rest[0]); err == nil {
			_, err = os.Stdout.WriteString(pid + "\n")
		}
	case "stop":
		// "stopped cgroups N": how many cgroups -design made.
		var said string
		if said, err = ask(opt["-sock"], ""); err == nil {
			_, err = os.Stdout.WriteString(said + "\n")
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "startfloor:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: startfloor serve -sock SOCK -dir DIR [-sleep PATH] [-design] | start -sock SOCK PROJECT | stop -sock SOCK")
	os.Exit(2)
}

// ask sends one request and returns the answer: a project to start in, or
// "" for the server to stop.
func ask(sock, project string) (string, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		return "", err
	}
	if _, err := syscall.Write(fd, []byte(project+"\n")); err != nil {
		return "", err
	}
	var buf [64]byte
	n, err := syscall.Read(fd, buf[:])
	if err != nil {
		return "", err
	}
	answer := string(bytes.TrimSpace(buf[:n]))
	if answer == "" || answer[0] == '!' {
		return "", fmt.Errorf("the server says: %q", answer)
	}
	return answer, nil
}

// record is as large as the record of a plain session the daemon writes.
var record = append(bytes.Repeat([]byte("x"), 1861), '\n')

func serve(sock, dir, sleep string, design bool) error {
	lfd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := syscall.Bind(lfd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		return err
	}
	if err := syscall.Listen(lfd, 16); err != nil {
		return err
	}
	null, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var pids []int
	var cg *cgroups
	if design {
		cg = newCgroups()
	}
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
		cg.remove()
	}()
	for n := 1; ; n++ {
		cfd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
		if err != nil {
			return err
		}
		var buf [4096]byte
		m, err := syscall.Read(cfd, buf[:])
		if err != nil {
			syscall.Close(cfd)
			return err
		}
		project := string(bytes.TrimSpace(buf[:m]))
		if project == "" {
			_, _ = syscall.Write(cfd, []byte(fmt.Sprintf("stopped cgroups %d\n", cg.used())))
			syscall.Close(cfd)
			return nil
		}
		answer := "!"
		var pid int
		if design {
			pid, err = startAsDesigned(project, filepath.Join(dir, strconv.Itoa(n)), sleep, cg, n)
		} else {
			pid, err = start(project, filepath.Join(dir, strconv.Itoa(n)), sleep, null)
		}
		if pid > 0 {
			pids = append(pids, pid)
		}
		if err == nil {
			answer = strconv.Itoa(pid)
		} else {
			answer += err.Error()
		}
		_, _ = syscall.Write(cfd, []byte(answer+"\n"))
		syscall.Close(cfd)
		if design && err == nil {
			// The lock follows the answer, as the daemon's does.
			if err := replace(filepath.Join(project, ".sessiond"), "session.lock", lock); err != nil {
				return err
			}
		}
	}
}

// start starts one session: its command, then its record, durably.
func start(project, sessionDir, sleep string, null int) (int, error) {
	// ForkExec returns once the child has executed sleep (or failed to).
	pid, err := syscall.ForkExec(sleep, []string{"sleep", "100000"}, &syscall.ProcAttr{
		Dir:   project,
		Env:   []string{"PATH=/usr/bin:/bin"},
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(null)},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return 0, err
	}
	if err := syscall.Mkdir(sessionDir, 0o700); err != nil {
		return pid, err
	}
	fd, err := syscall.Open(filepath.Join(sessionDir, "session.json"), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return pid, err
	}
	defer syscall.Close(fd)
	if _, err := syscall.Write(fd, record); err != nil {
		return pid, err
	}
	// One sync for the directory, its entry and the record's content.
	return pid, unix.Syncfs(fd)
}

// The sizes of the files a plain session's start makes, as the daemon
// writes them.
var (
	context = append(bytes.Repeat([]byte("c"), 632), '\n')
	lock    = append(bytes.Repeat([]byte("l"), 206), '\n')
)

// startAsDesigned starts session n as DESIGN.md §4 has it (see -design):
// its files, its cgroup (one of cg's, where cg makes them), its command,
// its record, durably.
func startAsDesigned(project, sessionDir, sleep string, cg *cgroups, n int) (int, error) {
	if err := syscall.Mkdir(sessionDir, 0o700); err != nil {
		return 0, err
	}
	out, err := syscall.Open(filepath.Join(sessionDir, "output.log"), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(out)
	env := os.Environ()
	if err := writeNew(filepath.Join(sessionDir, "environ"), []byte(strings.Join(env, "\x00"))); err != nil {
		return 0, err
	}
	if err := syscall.Mkdir(filepath.Join(project, ".sessiond"), 0o700); err != nil && err != syscall.EEXIST {
		return 0, err
	}
	if err := writeNew(filepath.Join(sessionDir, "session.json"), record); err != nil {
		return 0, err
	}
	if err := replace(filepath.Join(project, ".sessiond"), "context.md", context); err != nil {
		return 0, err
	}
	null, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(null)
	sys := &syscall.SysProcAttr{Setpgid: true}
	if cgfd := cg.make(n); cgfd >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, cgfd
		defer syscall.Close(cgfd)
	}
	// ForkExec returns once the child has executed sleep (or failed to).
	pid, err := syscall.ForkExec(sleep, []string{"sleep", "100000"}, &syscall.ProcAttr{
		Dir: project, Env: env, Files: []uintptr{uintptr(null), uintptr(out), uintptr(out)}, Sys: sys,
	})
	if err != nil {
		return 0, err
	}
	// One sync for the directories, their entries and the files' content.
	return pid, unix.Syncfs(out)
}

// writeNew writes a new file, data its content.
func writeNew(path string, data []byte) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = syscall.Write(fd, data)
	return err
}

// replace replaces dir/name with data through a temporary file renamed
// over it, not synced.
func replace(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := writeNew(tmp, data); err != nil {
		return err
	}
	return syscall.Rename(tmp, filepath.Join(dir, name))
}

// cgroups are the sessions' cgroups: directories of one of the server's
// own in a cgroup v2 hierarchy here, where one takes them.
type cgroups struct {
	parent string // "": none
	made   []string
}

func newCgroups() *cgroups {
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(root, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			continue
		}
		parent := filepath.Join(root, "startfloor-"+strconv.Itoa(os.Getpid()))
		if syscall.Mkdir(parent, 0o755) == nil {
			return &cgroups{parent: parent}
		}
	}
	return &cgroups{}
}

// make makes session n's cgroup and returns a descriptor of it, or -1.
func (c *cgroups) make(n int) int {
	if c.parent == "" {
		return -1
	}
	dir := filepath.Join(c.parent, strconv.Itoa(n))
	if syscall.Mkdir(dir, 0o755) != nil {
		return -1
	}
	c.made = append(c.made, dir)
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// used says how many cgroups were made.
func (c *cgroups) used() int {
	if c == nil {
		return 0
	}
	return len(c.made)
}

// remove removes the cgroups, once their processes are gone.
func (c *cgroups) remove() {
	if c == nil || c.parent == "" {
		return
	}
	for _, dir := range c.made {
		for i := 0; i < 100 && syscall.Rmdir(dir) == syscall.EBUSY; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	_ = syscall.Rmdir(c.parent)
}
