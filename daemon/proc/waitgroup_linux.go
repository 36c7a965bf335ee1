package proc

import (
	"errors"
	"os/exec"

	"golang.org/x/sys/unix"
)

// WaitGroup waits for a helper command started with Setpgid (and Start)
// to exit, kills what is left of its process group while the exited
// command still holds the group's id (it is not reaped yet), then reaps it
// as Wait does.
func WaitGroup(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if refuse(pid) == nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	return Wait(cmd)
}
