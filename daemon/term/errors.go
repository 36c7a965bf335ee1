package term

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/ipc"
)

// Errors callers branch on.
var (
	// ErrNoHolder: the directory has no record of a holder (no holder.json).
	ErrNoHolder = errors.New("no terminal holder recorded")
	// ErrHolderDied: the holder is gone (killed, crashed) without recording
	// how its child ended.
	ErrHolderDied = errors.New("terminal holder died without recording an exit status")
	// ErrExited: the session's command has ended; *ExitedError says how.
	ErrExited = errors.New("the terminal's command has ended")
	// ErrWriterTaken: another viewer is attached as the writer.
	ErrWriterTaken = errors.New("another viewer is attached as the writer; attach read-only or try again after it detaches")
)

// ExitedError says that the terminal's command ended, and how.
type ExitedError struct {
	Exit ipc.TermExit
}

// Error says how the command ended.
func (e *ExitedError) Error() string {
	return fmt.Sprintf("the terminal's command has ended (%s at %s)", e.Exit, e.Exit.ExitedAt.Format("2006-01-02 15:04:05Z07:00"))
}

// Is makes errors.Is(err, ErrExited) true.
func (e *ExitedError) Is(target error) bool { return target == ErrExited }

// HolderError is a refusal from the holder that no sentinel covers.
type HolderError struct {
	Code    string
	Message string
}

// Error returns the holder's message.
func (e *HolderError) Error() string { return "terminal holder: " + e.Message }

// errorFromFrame turns a TermError from the holder into the error callers
// branch on.
func errorFromFrame(te ipc.TermError, dir string) error {
	switch te.Code {
	case ipc.TermErrWriterTaken:
		return ErrWriterTaken
	case ipc.TermErrEnded:
		if ex, err := ReadExit(dir); err == nil {
			return &ExitedError{Exit: ex}
		}
		return ErrExited
	}
	return &HolderError{Code: te.Code, Message: te.Message}
}
