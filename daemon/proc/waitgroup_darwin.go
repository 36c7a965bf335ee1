package proc

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

// WaitGroup waits for a helper command started with Setpgid (and Start),
// then kills what is left of its process group. macOS cannot wait without
// reaping, so the group is killed just after.
func WaitGroup(cmd *exec.Cmd) error {
	err := Wait(cmd)
	if pid := cmd.Process.Pid; refuse(pid) == nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	return err
}
