package term

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Info is what holder.json records, once the child runs: who holds the
// terminal and who runs on it. Pids come with start times, so that a pid
// reused after a reboot or a crash is never taken for the same process.
type Info struct {
	HolderPID int `json:"holder_pid"`
	// HolderStart and ChildStart are start times in clock ticks after boot
	// (0 where the platform does not tell).
	HolderStart uint64 `json:"holder_start"`
	ChildPID    int    `json:"child_pid"`
	ChildStart  uint64 `json:"child_start"`
	// ChildIno is the child's pidfd inode, as proc.Process.Ino.
	ChildIno  uint64    `json:"child_ino,omitempty"`
	StartedAt time.Time `json:"started_at"`
	BootID    string    `json:"boot_id,omitempty"`
	Socket    string    `json:"socket"`
}

// ReadInfo reads the holder record of a session directory. A directory
// without one gives an error matching ErrNoHolder.
func ReadInfo(dir string) (Info, error) {
	var info Info
	err := state.ReadJSON(filepath.Join(dir, InfoName), &info)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%s: %w", dir, ErrNoHolder)
	}
	if err != nil {
		return Info{}, fmt.Errorf("read terminal holder record: %w", err)
	}
	if info.HolderPID <= 0 || info.ChildPID <= 0 {
		return Info{}, fmt.Errorf("read terminal holder record %s: pids missing", filepath.Join(dir, InfoName))
	}
	return info, nil
}

// ReadExit reads the exit status a holder recorded. Until the child has
// ended the error matches fs.ErrNotExist.
func ReadExit(dir string) (ipc.TermExit, error) {
	var ex ipc.TermExit
	if err := state.ReadJSON(filepath.Join(dir, ExitName), &ex); err != nil {
		return ipc.TermExit{}, fmt.Errorf("read terminal exit status: %w", err)
	}
	return ex, nil
}

func writeInfo(dir string, info Info) error {
	return state.WriteJSON(filepath.Join(dir, InfoName), info)
}

func writeExit(dir string, ex ipc.TermExit) error {
	return state.WriteJSON(filepath.Join(dir, ExitName), ex)
}

// removeStaleExit clears the exit file and final screen of an earlier run
// in the same directory, so that they are never taken for this run's.
func removeStaleExit(dir string) error {
	for _, name := range []string{ExitName, ScreenName} {
		err := os.Remove(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old %s: %w", name, err)
		}
	}
	return nil
}

// FinalScrollback is how many lines of scrollback the final screen keeps.
const FinalScrollback = 200

// ReadFinalScreen reads the screen a holder recorded when its command
// ended. Until then (or when the holder died first) the error matches
// fs.ErrNotExist.
func ReadFinalScreen(dir string) (ipc.TermScreen, error) {
	var scr ipc.TermScreen
	if err := state.ReadJSON(filepath.Join(dir, ScreenName), &scr); err != nil {
		return ipc.TermScreen{}, fmt.Errorf("read final terminal screen: %w", err)
	}
	return scr, nil
}

func writeFinalScreen(dir string, scr ipc.TermScreen) error {
	return state.WriteJSON(filepath.Join(dir, ScreenName), scr)
}
