//go:build !linux

package proc

import "syscall"

// spawner is Linux's (spawner_linux.go); elsewhere the caller forks.
type spawner struct{}

func spawnerFor() *spawner { return nil }

func (*spawner) forkExec(string, []string, *syscall.ProcAttr) (int, bool, error) {
	return 0, true, nil
}
