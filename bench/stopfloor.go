//go:build ignore

// stopfloor is the floor of a durable stop of N sessions on this machine:
// what `sessionctl stop --all` cannot do without, with nothing else around
// it. bench/ps.sh runs it beside supervisord's `stop all`.
//
//	go build -o stopfloor bench/stopfloor.go
//	stopfloor -n 1000 -dir DIR [-sleep /bin/sleep] [-writes=false]
//
// It starts N children (`sleep 100000`, each in a process group of its
// own, as the daemon starts a session), each with a project directory
// holding .sessiond/session.lock and a state directory holding its record,
// as a running session has. Then, timed: every group is sent SIGTERM in one
// pass, every child is waited for, and after each exit the files DESIGN.md
// §4 and §5.5 say an end writes before `stop` may return are written, each
// replaced atomically (a temporary file, synced, renamed over the name, the
// directory synced):
//
//   - in the project's .sessiond: handoff.json, session_state.json, an entry
//     appended to progress.md (made by the first end), and the lock released
//     (session.lock renamed aside);
//   - in the state directory: the handoff's archive and the record.
//
// The syncs are group-committed, as the daemon's are: writers that wait
// while a sync runs share the next one, a syncfs(2) of the file system.
// With -writes=false the children are only signalled and reaped, which is
// all supervisord's `stop all` does. Payloads have the sizes the daemon's
// files have for such a session.
//
// It prints one line: "stopfloor N SECONDS SYNCS".
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 100, "children")
	dir := flag.String("dir", "", "an empty directory for the projects and the state (required)")
	sleep := flag.String("sleep", "sleep", "the sleep(1) the children run")
	writes := flag.Bool("writes", true, "write each end's files (false: signal and reap only)")
	flag.Parse()
	if *dir == "" || *n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: stopfloor -n N -dir DIR [-sleep PATH] [-writes=false]")
		os.Exit(2)
	}
	if err := run(*n, *dir, *sleep, *writes); err != nil {
		fmt.Fprintln(os.Stderr, "stopfloor:", err)
		os.Exit(1)
	}
}

// Sizes of a plain session's files as the daemon writes them.
var (
	handoff  = filler(714)
	state    = filler(326)
	record   = filler(1862)
	lock     = filler(210)
	progress = filler(219)
)

func filler(n int) []byte { return append(bytes.Repeat([]byte("x"), n-1), '\n') }

type end struct {
	cmd     *exec.Cmd
	project string // the project's .sessiond
	state   string // the session's state directory
}

func run(n int, dir, sleep string, writes bool) error {
	ends := make([]end, n)
	for i := range ends {
		e := &ends[i]
		e.project = filepath.Join(dir, "p", strconv.Itoa(i+1), ".sessiond")
		e.state = filepath.Join(dir, "state", strconv.Itoa(i+1))
		for _, d := range []string{e.project, e.state} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(e.project, "session.lock"), lock, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(e.state, "session.json"), record, 0o600); err != nil {
			return err
		}
		e.cmd = exec.Command(sleep, "100000")
		e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := e.cmd.Start(); err != nil {
			for _, s := range ends[:i] {
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				_ = s.cmd.Wait()
			}
			return err
		}
	}
	// What the setup wrote is on disk before the clock starts.
	syscall.Sync()
	time.Sleep(time.Second)

	errs := make(chan error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range ends {
		_ = syscall.Kill(-ends[i].cmd.Process.Pid, syscall.SIGTERM)
	}
	for i := range ends {
		wg.Add(1)
		go func(e *end) {
			defer wg.Done()
			_ = e.cmd.Wait()
			if writes {
				if err := e.write(); err != nil {
					errs <- err
				}
			}
		}(&ends[i])
	}
	wg.Wait()
	elapsed := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("stopfloor %d %.6f %d\n", n, elapsed.Seconds(), syncs)
	return nil
}

// write writes what an end must have on disk before its stop returns.
func (e *end) write() error {
	if err := replace(e.project, "handoff.json", handoff); err != nil {
		return err
	}
	if err := replace(e.project, "session_state.json", state); err != nil {
		return err
	}
	if err := appendTo(e.project, "progress.md", progress); err != nil {
		return err
	}
	if err := release(e.project); err != nil {
		return err
	}
	if err := replace(e.state, "handoff.json", handoff); err != nil {
		return err
	}
	return replace(e.state, "session.json", record)
}

// replace replaces dir/name with data atomically and durably.
func replace(dir, name string, data []byte) error {
	d, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(d)
	tmp := filepath.Join(dir, "."+name+".tmp")
	fd, err := syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if _, err := syscall.Write(fd, data); err != nil {
		syscall.Close(fd)
		return err
	}
	if err := groupSync(fd); err != nil {
		syscall.Close(fd)
		return err
	}
	syscall.Close(fd)
	if err := syscall.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return groupSync(d)
}

// appendTo appends data to dir/name, made if missing, durably.
func appendTo(dir, name string, data []byte) error {
	fd, err := syscall.Open(filepath.Join(dir, name), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if _, err := syscall.Write(fd, data); err != nil {
		return err
	}
	if err := groupSync(fd); err != nil {
		return err
	}
	return syncDir(dir)
}

// release renames the lock aside, durably.
func release(dir string) error {
	if err := syscall.Rename(filepath.Join(dir, "session.lock"), filepath.Join(dir, ".session.lock.spare")); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(d)
	return groupSync(d)
}

// The group commit: a writer that finds a sync running waits; when it
// ends, the first waiter makes the next one for all who waited by then (a
// syncfs of the file system; an fsync when alone), as the daemon's do. The
// projects and the state are on one file system here.
var (
	mu      sync.Mutex
	syncing bool
	queue   []*waiter
	syncs   int
)

type waiter struct {
	done chan error
	lead chan struct{}
}

func groupSync(fd int) error {
	w := &waiter{done: make(chan error, 1), lead: make(chan struct{}, 1)}
	mu.Lock()
	queue = append(queue, w)
	if syncing {
		mu.Unlock()
		select {
		case err := <-w.done:
			return err
		case <-w.lead:
		}
		mu.Lock()
	}
	syncing = true
	batch := queue
	queue = nil
	syncs++
	mu.Unlock()
	var err error
	if len(batch) == 1 {
		err = syscall.Fsync(fd)
	} else {
		err = unix.Syncfs(fd)
	}
	for _, b := range batch {
		b.done <- err
	}
	mu.Lock()
	if len(queue) > 0 {
		queue[0].lead <- struct{}{}
	} else {
		syncing = false
	}
	mu.Unlock()
	return <-w.done
}
