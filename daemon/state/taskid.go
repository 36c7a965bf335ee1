package state

import "github.com/sessiond/sessiond/ipc/format"

// TaskID identifies a task or feature (format.TaskID).
type TaskID = format.TaskID

// IntTaskID returns the numeric TaskID n.
func IntTaskID(n int64) TaskID { return format.IntTaskID(n) }

// StringTaskID returns the string TaskID s.
func StringTaskID(s string) TaskID { return format.StringTaskID(s) }
