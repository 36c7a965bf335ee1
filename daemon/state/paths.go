package state

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// DirName is the directory inside a project that holds sessiond's files.
const DirName = ".sessiond"

// File names inside a project's .sessiond directory.
const (
	SessionStateFile = "session_state.json"
	HandoffFile      = "handoff.json"
	ProgressFile     = "progress.md"
	ContextFile      = "context.md"
	LockFile         = "session.lock"
	WarningFile      = "warning.json"
)

// ProjectConfigFile is a project's own config, read by Project.ReadConfig.
const ProjectConfigFile = "sessiond.toml"

// ProjectID returns the project id of an absolute, symlink-resolved project
// path: the first 12 hex digits of the SHA-256 of the path.
func ProjectID(absResolvedPath string) string {
	sum := sha256.Sum256([]byte(absResolvedPath))
	return hex.EncodeToString(sum[:6])
}

// SessionStatePath returns the path of the project's session_state.json.
func SessionStatePath(project string) string {
	return filepath.Join(project, DirName, SessionStateFile)
}

// HandoffPath returns the path of the project's latest handoff.json.
func HandoffPath(project string) string { return filepath.Join(project, DirName, HandoffFile) }

// ProgressPath returns the default path of the project's progress log, used
// when the spec names no progress_file.
func ProgressPath(project string) string { return filepath.Join(project, DirName, ProgressFile) }

// ContextPath returns the path of the context.md handed to the next session.
func ContextPath(project string) string { return filepath.Join(project, DirName, ContextFile) }

// LockPath returns the path of the project's session.lock.
func LockPath(project string) string { return filepath.Join(project, DirName, LockFile) }

// WarningPath returns the path of the warning.json written before a deadline.
func WarningPath(project string) string { return filepath.Join(project, DirName, WarningFile) }
