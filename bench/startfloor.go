//go:build ignore

// startfloor is the floor of a durable start on this machine: what one
// `sessionctl start` cannot do without, with nothing else around it.
// bench/ps.sh runs N of them in the loop its sequential starts run in.
//
//	go build -o startfloor bench/startfloor.go
//	startfloor serve -sock SOCK -dir DIR [-sleep /bin/sleep] &
//	startfloor start -sock SOCK PROJECT    # one start, as a client: prints the child's pid
//	startfloor stop -sock SOCK             # the children killed, the server gone
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
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	// The arguments are read by hand: a client's start-up is the hello
	// world's and the packages it initialises.
	args := os.Args[1:]
	opt := map[string]string{"-sleep": "/bin/sleep"}
	var rest []string
	for i := 1; i < len(args); i++ {
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
		err = serve(opt["-sock"], opt["-dir"], opt["-sleep"])
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
		_, err = ask(opt["-sock"], "")
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "startfloor:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: startfloor serve -sock SOCK -dir DIR [-sleep PATH] | start -sock SOCK PROJECT | stop -sock SOCK")
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

func serve(sock, dir, sleep string) error {
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
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
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
			_, _ = syscall.Write(cfd, []byte("stopped\n"))
			syscall.Close(cfd)
			return nil
		}
		answer := "!"
		pid, err := start(project, filepath.Join(dir, strconv.Itoa(n)), sleep, null)
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
