package state

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/ipc/format"
)

// Task statuses of a handoff.
const (
	TaskCompleted  = format.TaskCompleted
	TaskInProgress = format.TaskInProgress
	TaskBlocked    = format.TaskBlocked
	TaskFailed     = format.TaskFailed
)

// Limits that BoundHandoff enforces on lists that grow with the session.
const (
	MaxHandoffFiles    = 1000
	MaxHandoffSteps    = 20
	MaxHandoffWarnings = 50
	MaxLogTailLines    = 200
	MaxLogLineLen      = 1000
	maxHandoffText     = 2000
	// maxFileNameLen is PATH_MAX: longer is not a path.
	maxFileNameLen = 4096
)

// Handoff is handoff.json (format.Handoff).
type Handoff = format.Handoff

// BoundHandoff keeps a handoff readable: at most MaxHandoffSteps next steps,
// MaxHandoffWarnings warnings, MaxLogTailLines log lines (the last ones) of
// MaxLogLineLen characters, and MaxHandoffFiles file names per list, a
// warning saying how many were left out. Every text is escaped as
// StoreText does, so that no control character is stored. Nil lists become
// empty ones.
func BoundHandoff(h *Handoff) {
	for _, f := range []*string{&h.SessionID, &h.ProjectDir, &h.EndReason, &h.Signal, &h.TaskStatus,
		&h.GitCommitHash, &h.GitBranch, &h.Checkpoint, &h.LastFileEdited} {
		*f = bound(*f, maxHandoffText)
	}
	h.TaskAttempted = bound(h.TaskAttempted, maxHandoffText)
	h.LastActionTaken = bound(h.LastActionTaken, maxHandoffText)
	h.BlockedReason = bound(h.BlockedReason, maxHandoffText)
	if h.Agent != nil {
		boundAgent(h.Agent)
	}
	h.RecommendedNextSteps = boundList(h.RecommendedNextSteps, MaxHandoffSteps, maxHandoffText)
	h.Warnings = boundList(h.Warnings, MaxHandoffWarnings, maxHandoffText)
	h.UncommittedFiles = boundFiles(h, "uncommitted_files", h.UncommittedFiles)
	h.FilesChanged = boundFiles(h, "files_changed", h.FilesChanged)
	if len(h.LogTail) > MaxLogTailLines {
		h.LogTail = h.LogTail[len(h.LogTail)-MaxLogTailLines:]
	}
	tail := make([]string, len(h.LogTail))
	for i, l := range h.LogTail {
		tail[i] = bound(l, MaxLogLineLen)
	}
	h.LogTail = tail
	cmd := make([]string, len(h.Command))
	for i, a := range h.Command {
		cmd[i] = storeEscape(a)
	}
	h.Command = cmd
}

func boundFiles(h *Handoff, name string, files []string) []string {
	if len(files) > MaxHandoffFiles {
		if len(h.Warnings) < MaxHandoffWarnings {
			h.Warnings = append(h.Warnings, fmt.Sprintf("%s: %d more not listed", name, len(files)-MaxHandoffFiles))
		}
		files = files[:MaxHandoffFiles]
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = bound(f, maxFileNameLen)
	}
	return out
}

// encodeHandoff bounds h and encodes it, halving the lists that grow with a
// session (file names, the log tail, the command's arguments) until the
// result fits MaxHandoffSize, with a warning that it was trimmed: a handoff
// sessiond writes is always one it can read back.
func encodeHandoff(h *Handoff) ([]byte, error) {
	BoundHandoff(h)
	data, err := marshalJSON(h)
	for trimmed := false; err == nil && len(data) > handoffCap; {
		if !trimmed {
			trimmed = true
			h.Warnings = append(h.Warnings[:min(len(h.Warnings), MaxHandoffWarnings-1)],
				fmt.Sprintf("handoff trimmed to fit %s: lists shortened", byteSize(int64(handoffCap))))
		}
		if len(h.FilesChanged)+len(h.UncommittedFiles)+len(h.LogTail)+len(h.Command) == 0 {
			return nil, fmt.Errorf("handoff is %d bytes even without its lists, over the %s limit", len(data), byteSize(int64(handoffCap)))
		}
		h.FilesChanged = h.FilesChanged[:len(h.FilesChanged)/2]
		h.UncommittedFiles = h.UncommittedFiles[:len(h.UncommittedFiles)/2]
		h.LogTail = h.LogTail[len(h.LogTail)-len(h.LogTail)/2:] // the last half
		h.Command = h.Command[:len(h.Command)/2]
		data, err = marshalJSON(h)
	}
	return data, err
}

// handoffCap is MaxHandoffSize; tests lower it.
var handoffCap = MaxHandoffSize

// SaveHandoff bounds h (see Bound) and writes it atomically, mode 0600, to
// the project's .sessiond/handoff.json, creating .sessiond if needed.
func (p *Project) SaveHandoff(h *Handoff) error {
	if h == nil {
		return errors.New("save handoff: nil handoff")
	}
	data, err := encodeHandoff(h)
	if err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	if err := p.writeStateReusing(HandoffFile, data); err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	return nil
}

// LoadHandoff reads the project's .sessiond/handoff.json. A missing file
// gives an error wrapping fs.ErrNotExist; a corrupt or oversized one (over
// MaxHandoffSize) is moved aside and gives a *CorruptError; a symlink, FIFO
// or device is refused (ErrFileType).
func (p *Project) LoadHandoff() (*Handoff, error) {
	var h Handoff
	if err := p.readStateJSON(HandoffFile, MaxHandoffSize, &h); err != nil {
		return nil, fmt.Errorf("load handoff: %w", err)
	}
	return &h, nil
}

// SaveHandoff bounds h (see Bound) and writes it atomically, mode 0600, to
// path with the caller's own rights, creating missing parent directories
// with mode 0700; a path in a project's .sessiond (HandoffPath) gets it
// through ProjectDir. The daemon uses it for the archive copy in its state
// directory, and Project.SaveHandoff for the project's.
func SaveHandoff(path string, h *Handoff) error {
	if h == nil {
		return errors.New("save handoff: nil handoff")
	}
	if err := ensureParent(path); err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	data, err := encodeHandoff(h)
	if err == nil {
		// Durably, as WriteFile does, into the spare beside it if one was
		// made with its directory (a session's is): an end then makes no
		// file for its archive.
		err = writeFileReusing(path, data, durable)
	}
	if err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	return nil
}

// LoadHandoff reads the handoff at path with the caller's own rights. A
// missing file gives an error wrapping fs.ErrNotExist; a corrupt or
// oversized one is moved aside and gives a *CorruptError.
func LoadHandoff(path string) (*Handoff, error) {
	var h Handoff
	if err := readJSONPath(path, MaxHandoffSize, &h); err != nil {
		return nil, fmt.Errorf("load handoff: %w", err)
	}
	return &h, nil
}
