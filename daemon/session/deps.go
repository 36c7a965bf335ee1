package session

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// Deps are the services a session uses, handed to it rather than reached
// for: the daemon builds them once and every session shares them.
type Deps struct {
	Clock Clock
	Log   *zap.Logger
	// StateDir is the daemon's state dir; a session's files live in
	// StateDir/sessions/<id>.
	StateDir string
	// Socket is the daemon's socket, given to the child (SESSIOND_SOCKET).
	Socket string
	// Sessionctl is the absolute path of the sessionctl that agents' hooks
	// and MCP server run; "" runs agents without sessiond's hooks.
	Sessionctl string
	// BootID tells this boot from another, so that a pid recorded before a
	// reboot is never taken for a live child.
	BootID string
	// LeaveOut are the directories neither the watcher nor checkpoints
	// count as the project's work when untracked (node_modules, .venv...):
	// one list, so that files_changed and checkpoints agree.
	LeaveOut []string

	Events  Publisher
	Records RecordWriter
	// Stops records the intents of the stops under way before their
	// first signal, the record of the session following at its end (nil:
	// the record is written at once).
	Stops       StopRecorder
	Watches     Watcher
	Checkpoints Checkpointer
	Schedule    Scheduler
	Output      OutputWatcher
	// Terminal says how tty sessions start their terminal holders.
	Terminal TerminalDeps
	// Cgroups is what the host offers to contain sessions (nil: nothing).
	Cgroups *cgroup.Host
	// Later runs work that can wait until starts and ends pause
	// (*later.Queue); nil runs it at once.
	Later Deferrer

	// Live reports whether the session with an id is live (a lock file
	// left by one that is not means an unclean end).
	Live func(id string) bool
	// Pending counts the ends that cannot be written yet.
	Pending *PendingEnds
	// OnEnd is called once the session has ended or failed, its end on
	// disk, from the session's goroutine: the daemon applies the restart
	// policy there.
	OnEnd func(*Session)
	// OnLimit is called when the session's agent hits a usage limit, on
	// the session's goroutine: it must not block.
	OnLimit func(*Session, ipc.AgentLimit)
}

// Deferrer runs work that can wait, on a goroutine of its own.
type Deferrer interface {
	// Do runs f once starts and ends pause, or never if the daemon stops
	// first.
	Do(f func())
	// Tidy runs f once starts and ends pause, or as the daemon stops.
	Tidy(f func())
}

// StopRecorder keeps the intents of the stops under way on disk, for the
// next daemon to finish a stop this one began (a session recovered with an
// intent recorded is stopping). Record returns once the intent of the stop
// of session id is on disk; Done says that the session's record carries
// it now.
type StopRecorder interface {
	Record(id string, in ipc.StopIntent) error
	Done(id string)
}

// Publisher sends events to the event stream.
type Publisher interface {
	Publish(ev ipc.Event)
}

// RecordWriter makes a session record durable (sessions/<id>/session.json),
// and before the first the session's directory, whose entry is durable
// once synced returns nil. WriteRecord reads rec only until it returns.
type RecordWriter interface {
	MakeDir(dir string) (synced func() error, err error)
	WriteRecord(rec *ipc.Session) error
}

// RecordJSONWriter is a RecordWriter that can also give back the compact
// encoding of the record it wrote, which the event that follows carries
// rather than encode the record again.
type RecordJSONWriter interface {
	WriteRecordJSON(rec *ipc.Session) (json.RawMessage, error)
}

// Watcher watches project directories; *watch.Hub is one. Prepare begins
// ahead what a watch waits for longest at its start (nil: nothing to
// begin), for Watch to take over through Options.Prepared.
type Watcher interface {
	Prepare(root string, opt watch.Options) *watch.Prepared
	Watch(root string, opt watch.Options) (*watch.Watch, error)
}

// Checkpointer takes checkpoints; *checkpoint.Checkpointer is one.
type Checkpointer interface {
	Take(ctx context.Context, req checkpoint.TakeRequest) (checkpoint.Result, error)
}

// Scheduler runs jobs on cron schedules.
type Scheduler interface {
	// Schedule runs job at every tick of spec until cancel is called. Job
	// must not block.
	Schedule(spec string, job func()) (cancel func(), err error)
}

// OutputWatcher tells a session when its log is written to, without a
// pipe through the daemon.
type OutputWatcher interface {
	// WatchLog calls onWrite (which must not block) after writes to the log
	// at path, until unwatch is called; meanwhile the log is kept within
	// its cap.
	WatchLog(path string, onWrite func(time.Time)) (unwatch func())
	// Tail returns the last n lines of the log at path, across its
	// rotated files.
	Tail(path string, n int) []string
	// Output returns what a plain session's command writes its output
	// to, given its log opened for appending (out, which may be it).
	Output(path string, out *os.File) *os.File
	// Done says the session's processes are gone: what is still on its
	// way into the log at path is put there, and nothing more comes.
	Done(path string)
}
