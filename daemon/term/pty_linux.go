package term

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns the pty master as a non-blocking file served by the
// runtime's poller. pty.Open hands it back in blocking mode (it asks for the
// fd), and a blocking read would hold an OS thread for as long as the
// terminal is quiet.
func pollable(master *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(master.Fd()))
	if err != nil {
		return nil, fmt.Errorf("duplicate pty master: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	master.Close()
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}
