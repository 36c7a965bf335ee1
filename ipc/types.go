package ipc

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc/sum256"
)

// APIVersion is the version prefix of every route.
const APIVersion = "v1"

// VersionHeader is set on every response to the daemon's version.
const VersionHeader = "Sessiond-Version"

// WarningHeader is set on every response while the daemon has something
// to warn every caller of ("state dir full: 3 ends pending").
const WarningHeader = "Sessiond-Warning"

// TokenScopeHeader is set on every answer of the web listener to the
// scope of the token the request came with ("read" or "control"), so
// that a page can offer only what the token may do.
const TokenScopeHeader = "Sessiond-Token-Scope"

// Session states.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateWarned   = "warned"
	StateStopping = "stopping"
	StateEnded    = "ended"
	StateFailed   = "failed"
)

// End reasons.
const (
	EndComplete    = "complete"
	EndError       = "error"
	EndTimeout     = "timeout"
	EndIdle        = "idle"
	EndInterrupted = "interrupted"
	EndCrashed     = "crashed"
	EndBudget      = "budget"
	EndOOM         = "oom"
	EndWaiting     = "waiting"
)

// Live reports whether a session in state s is held by the daemon: it
// has a process to supervise, or is queued to have one.
func Live(s string) bool {
	return s == StateStarting || s == StateRunning || s == StateWarned || s == StateStopping || s == StateQueued
}

// Running reports whether a session in state s has a process to
// supervise (a queued one has none yet).
func Running(s string) bool {
	return s != StateQueued && Live(s)
}

// Session is the session record: what session.json holds, what inspect
// prints, and each element of ps --json.
type Session struct {
	ID               string     `json:"id"`
	Name             string     `json:"name"`
	ProjectDir       string     `json:"project_dir"`
	ProjectID        string     `json:"project_id"`
	Command          []string   `json:"command"`
	State            string     `json:"state"`
	PID              int        `json:"pid"`
	StartedAt        time.Time  `json:"started_at"`
	EndedAt          *time.Time `json:"ended_at"`
	Deadline         time.Time  `json:"deadline"`
	WarnAt           time.Time  `json:"warn_at"`
	EndReason        string     `json:"end_reason"`
	ExitCode         *int       `json:"exit_code"`
	Signal           string     `json:"signal"`
	Restarts         int        `json:"restarts"`
	RestartOf        string     `json:"restart_of"`
	LastActivity     *time.Time `json:"last_activity"`
	LastFileEdited   string     `json:"last_file_edited"`
	FilesChanged     []string   `json:"files_changed"`
	FilesChangedMore int        `json:"files_changed_more,omitempty"`
	Checkpoints      int        `json:"checkpoints"`
	LastCheckpoint   string     `json:"last_checkpoint"`
	LogPath          string     `json:"log_path"`

	// Seq numbers the writes of the record: it only grows, so that a reader
	// (and crash recovery) can tell a newer record from an older one.
	Seq uint64 `json:"seq"`
	// UID is the user the session runs as and belongs to.
	UID int `json:"uid"`
	// StartTime is the child's start time in clock ticks after boot, which
	// with BootID tells a live child from a reused pid.
	StartTime uint64 `json:"start_time,omitempty"`
	BootID    string `json:"boot_id,omitempty"`
	// PIDIno is the child's pidfd inode where the kernel gives each
	// process its own (Linux 6.9 and later): two processes of one boot
	// never share it, even when they start in the same clock tick.
	PIDIno uint64 `json:"pid_ino,omitempty"`
	// Error says why a session failed to start, or what went wrong at its end.
	Error string `json:"error,omitempty"`
	// EnvKeys names the variables given with --env; their values are never
	// written anywhere.
	EnvKeys []string `json:"env_keys,omitempty"`
	// Warning records what happened at the warning time.
	Warning *Warning `json:"warning,omitempty"`
	// DeadlineWarned says the deadline's warning was given for the
	// present warn_at (another warning, waiting's, may have come since):
	// a daemon that adopts the session gives it no second time.
	DeadlineWarned bool `json:"deadline_warned,omitempty"`
	// Stop is the stop under way, in the record before its first signal:
	// a daemon that restarts in the middle of it finishes it.
	Stop *StopIntent `json:"stop,omitempty"`
	// Spec is the resolved spec the session runs under (env values left
	// out). Listings leave it out; the record of one session has it.
	Spec *config.Spec `json:"spec,omitempty"`
	// Warnings are problems the next session should know of (failed
	// checkpoints, unknown exit status, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Report is what the agent reported from inside the session.
	Report *Report `json:"report,omitempty"`
	// Blockers are the project's open blockers as the session knows them
	// (those of the state at its start, with those reported since), and
	// ResolvedBlockers those it resolved; BlockerSeq is the last id given.
	Blockers         []Blocker `json:"blockers,omitempty"`
	ResolvedBlockers []Blocker `json:"resolved_blockers,omitempty"`
	BlockerSeq       int       `json:"blocker_seq,omitempty"`
	// PassingAtStart are the feature list's passing items at the start, so
	// that an end finished after a crash still tells what turned passing.
	PassingAtStart []TaskID `json:"passing_at_start,omitempty"`
	// HandoffPath is where the session's handoff was written.
	HandoffPath string `json:"handoff_path,omitempty"`
	// Usage is what the session's process tree uses now, when asked for
	// (GET /v1/sessions?stats=1); never stored.
	Usage *Usage `json:"usage,omitempty"`
	// Cgroup is where the session's processes are contained (nil: in no
	// cgroup of their own); Memory their memory's account from it, at
	// the end (with its peak and OOM kills) or, live, when asked for.
	Cgroup *Cgroup `json:"cgroup,omitempty"`
	Memory *Memory `json:"memory,omitempty"`
	// DevServerWasRunning records, at the end, whether a sidecar was still
	// running when the session stopped.
	DevServerWasRunning bool `json:"dev_server_was_running,omitempty"`
	// Agent is the coding agent the session runs, when its command is one
	// (or the spec names one); nil for other commands.
	Agent *Agent `json:"agent,omitempty"`
	// Tokens is the agent's model use so far, from its transcript.
	Tokens *Tokens `json:"tokens,omitempty"`
	// TTY is a session whose command runs on a terminal held by its
	// holder process (sessionctl attach, screen, send).
	TTY bool `json:"tty,omitempty"`
	// Worktree is the git worktree the session runs in, if any.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Pool is the pool the session counts in: the spec's pool, else its
	// agent's account ("claude-code:/home/me/.claude"); "" for none.
	Pool string `json:"pool,omitempty"`
	// Queue is where a queued session stands (nil once it runs).
	Queue *QueuePlace `json:"queue,omitempty"`
	// Host is the context the session is of, in a listing of several
	// hosts (sessionctl ps --all-contexts, ui --all-contexts); a daemon
	// never sets it.
	Host string `json:"host,omitempty"`
}

// SessionRow is the part of a session record that a table of sessions
// shows (sessionctl ps): GET /v1/sessions?view=row sends these, a third of
// the size of whole records.
type SessionRow struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Command      []string   `json:"command"`
	State        string     `json:"state"`
	EndReason    string     `json:"end_reason"`
	PID          int        `json:"pid"`
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at"`
	Deadline     time.Time  `json:"deadline"`
	Restarts     int        `json:"restarts"`
	LastActivity *time.Time `json:"last_activity"`
	Checkpoints  int        `json:"checkpoints"`
	ProjectDir   string     `json:"project_dir"`
	Usage        *Usage     `json:"usage,omitempty"`
	// Agent, Tokens, TTY and Worktree are the record's.
	Agent    *Agent    `json:"agent,omitempty"`
	Tokens   *Tokens   `json:"tokens,omitempty"`
	TTY      bool      `json:"tty,omitempty"`
	Worktree *Worktree `json:"worktree,omitempty"`
	// Pool and Queue are the record's.
	Pool  string      `json:"pool,omitempty"`
	Queue *QueuePlace `json:"queue,omitempty"`
}

// Usage is what a live session's whole process tree uses.
type Usage struct {
	// CPUPercent is the tree's CPU use since the previous sample (or, the
	// first time, since it started), in percent of one core.
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the tree's resident memory.
	RSSBytes int64 `json:"rss_bytes"`
	// Procs is the number of processes in the tree.
	Procs int `json:"procs"`
}

// Row returns the table row of a record.
func (s *Session) Row() SessionRow {
	return SessionRow{ID: s.ID, Name: s.Name, Command: s.Command, State: s.State, EndReason: s.EndReason,
		PID: s.PID, StartedAt: s.StartedAt, EndedAt: s.EndedAt, Deadline: s.Deadline, Restarts: s.Restarts,
		LastActivity: s.LastActivity, Checkpoints: s.Checkpoints, ProjectDir: s.ProjectDir, Usage: s.Usage,
		Agent: s.Agent, Tokens: s.Tokens, TTY: s.TTY, Worktree: s.Worktree, Pool: s.Pool, Queue: s.Queue}
}

// StopIntent is a stop asked for: when, why, with what grace, by whom,
// and whether a restart is to follow.
type StopIntent struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	// GraceMS is the grace in milliseconds between the stop signal and
	// SIGKILL.
	GraceMS int64 `json:"grace_ms"`
	// By is the uid of who asked; -1 for the daemon itself (a deadline,
	// an idle session, a budget, the daemon's shutdown).
	By int `json:"by"`
	// Restart says sessionctl restart asked: once this session has ended,
	// its successor starts, once.
	Restart bool `json:"restart,omitempty"`
}

// Warning records a session's warning: when it was given and who was signalled.
type Warning struct {
	At time.Time `json:"at"`
	// Reason is what the warning is for: "deadline" (also when empty),
	// "waiting" (the agent waited for input too long) or "budget".
	Reason   string        `json:"reason,omitempty"`
	Signal   string        `json:"signal,omitempty"`
	Signaled []int         `json:"signaled,omitempty"`
	Skipped  []SkippedProc `json:"skipped,omitempty"`
	Hook     string        `json:"hook,omitempty"`
}

// What a warning is for (Warning.Reason).
const (
	WarnDeadline = "deadline"
	WarnWaiting  = "waiting"
	WarnBudget   = "budget"
	WarnMemory   = "memory"
	WarnStalled  = "stalled"
)

// RestartLimitKey marks (in its data) the failed event of a session the
// restart policy gave up on: max_restarts within restart_window.
const RestartLimitKey = "restart_limit"

// SkippedProc is a process that was not sent the warning signal, and why.
type SkippedProc struct {
	PID    int    `json:"pid"`
	Reason string `json:"reason"`
}

// ResumeLast is StartRequest.Resume for the project's last conversation
// (--resume without a value).
const ResumeLast = "last"

// StartRequest asks for a new session. Empty fields take the project's
// sessiond.toml value, else the daemon's default.
type StartRequest struct {
	Dir             string            `json:"dir"`
	Command         []string          `json:"command,omitempty"`
	Name            string            `json:"name,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	Timeout         string            `json:"timeout,omitempty"`
	WarnBefore      string            `json:"warn_before,omitempty"`
	WarnSignal      string            `json:"warn_signal,omitempty"`
	WarnSignalForce bool              `json:"warn_signal_force,omitempty"`
	OnWarning       string            `json:"on_warning,omitempty"`
	StopSignal      string            `json:"stop_signal,omitempty"`
	StopGrace       string            `json:"stop_grace,omitempty"`
	IdleTimeout     string            `json:"idle_timeout,omitempty"`
	Checkpoint      *string           `json:"checkpoint,omitempty"`
	Restart         string            `json:"restart,omitempty"`
	// Agent names the agent (auto, none, claude-code, codex, generic).
	Agent          string  `json:"agent,omitempty"`
	WaitingTimeout string  `json:"waiting_timeout,omitempty"`
	MaxTokens      int64   `json:"max_tokens,omitempty"`
	MaxCostUSD     float64 `json:"max_cost_usd,omitempty"`
	// Resume continues an agent conversation: "last" (the project's last
	// one), a conversation id (a UUID), a session's id or name (its
	// conversation), or a project directory (its last one).
	Resume string `json:"resume,omitempty"`
	// Worktree runs the session in a git worktree of the repository Dir
	// is in, named WorktreeName (default: the session's id), made from
	// From (default: HEAD) if it does not exist yet.
	Worktree     bool   `json:"worktree,omitempty"`
	WorktreeName string `json:"worktree_name,omitempty"`
	From         string `json:"from,omitempty"`
	// TTY runs the command on a terminal (true) or not (false); nil leaves
	// it to the spec (and its default for interactive agents).
	TTY *bool `json:"tty,omitempty"`
	// Environ is the environment of the caller ("KEY=VALUE"), which the
	// session runs with (under Env and the spec's env) unless InheritEnv
	// is false; nil for none. Its values are never recorded or logged.
	Environ []string `json:"environ,omitempty"`
	// InheritEnv false runs the session with a clean environment instead
	// (the spec's inherit_env).
	InheritEnv *bool `json:"inherit_env,omitempty"`
	// EnvironOfFirst, in a batch, is Environ given once: the first
	// request's (a thousand copies would not fit a request).
	EnvironOfFirst bool `json:"environ_of_first,omitempty"`
	// Limits over the spec's: sizes as in sessiond.toml ("2G"), cpu_max a
	// percentage of one CPU, Limits "strict" or "best-effort".
	MemoryMax  string `json:"memory_max,omitempty"`
	MemoryHigh string `json:"memory_high,omitempty"`
	PidsMax    int64  `json:"pids_max,omitempty"`
	CPUWeight  int64  `json:"cpu_weight,omitempty"`
	CPUMax     string `json:"cpu_max,omitempty"`
	Limits     string `json:"limits,omitempty"`
	// Pool is the pool the session counts in (the spec's pool); Priority
	// its place in the queue against others (higher first).
	Pool     string `json:"pool,omitempty"`
	Priority *int   `json:"priority,omitempty"`
	// Queue false refuses the start rather than queue it when its pool is
	// full; nil or true queues it.
	Queue *bool `json:"queue,omitempty"`
	// After starts the session once session After has ended successfully
	// (with AfterAny, once it has ended at all); until then it is queued.
	After    string `json:"after,omitempty"`
	AfterAny bool   `json:"after_any,omitempty"`
	// OnLimit overrides the spec's on_limit; HardDeadline says the timeout
	// is a wall a scheduler set, which no wait moves.
	OnLimit      string `json:"on_limit,omitempty"`
	HardDeadline bool   `json:"hard_deadline,omitempty"`
	StallTimeout string `json:"stall_timeout,omitempty"`
}

// StartResponse is the new session, and the project's restore summary
// (empty when the project has no state).
type StartResponse struct {
	Session Session `json:"session"`
	Summary string  `json:"summary,omitempty"`
	// Notices are problems found while starting that did not stop it, such
	// as a corrupt state file that was kept aside.
	Notices []string `json:"notices,omitempty"`
}

// StopRequest asks for a graceful stop; Grace overrides the spec's stop_grace.
type StopRequest struct {
	Grace string `json:"grace,omitempty"`
}

// RestartRequest asks to restart a session; Grace overrides the stop's.
type RestartRequest struct {
	Grace string `json:"grace,omitempty"`
	// Environ is the caller's environment, for a restart of the caller's
	// own session; nil keeps the one the session ran with.
	Environ []string `json:"environ,omitempty"`
}

// PruneRequest asks to remove ended sessions; OlderThan ("7d" is not a Go
// duration: use "168h") keeps those that ended more recently.
type PruneRequest struct {
	OlderThan string `json:"older_than,omitempty"`
}

// PruneResponse lists the sessions removed.
type PruneResponse struct {
	Removed []string `json:"removed"`
}

// SignalRequest asks for a signal to the session's process group.
type SignalRequest struct {
	Signal string `json:"signal"`
}

// ExtendRequest moves a session's deadline (and warning) later by By.
// ByAgent is the agent's own request (its MCP tool), which the spec's
// agent_may_extend caps.
type ExtendRequest struct {
	By      string `json:"by"`
	ByAgent bool   `json:"by_agent,omitempty"`
}

// Event types.
const (
	EventStarted    = "started"
	EventWarned     = "warned"
	EventCheckpoint = "checkpoint"
	EventActivity   = "activity"
	EventStopping   = "stopping"
	EventEnded      = "ended"
	EventRestarted  = "restarted"
	EventFailed     = "failed"
	EventExtended   = "extended"
	// The agent's state changes (Agent.State), one event per change.
	EventAgentWorking = "agent_working"
	EventAgentWaiting = "agent_waiting"
	EventAgentIdle    = "agent_idle"
	// EventAgentRetrying is the start of a spell of failed requests to the
	// agent's API, which it retries (Agent.Retrying).
	EventAgentRetrying = "agent_retrying"
	// EventBudget is a session at its token or cost budget's warning.
	EventBudget = "budget"
	// EventAgentLimited is an agent at a usage limit (Agent.Limit);
	// EventAgentStalled one that made no progress for stall_timeout.
	EventAgentLimited = "agent_limited"
	EventAgentStalled = "agent_stalled"
	// EventQueued is a session queued; EventContinued one that goes on
	// after its limit reset.
	EventQueued    = "queued"
	EventContinued = "continued"
	// EventMissed stands, in a follower's stream, for the events that did
	// not reach it because it fell too far behind; its data says how
	// many. It is about no session: a client that keeps state from the
	// stream reads it again.
	EventMissed = "missed"
)

// Event is one line of the event stream.
type Event struct {
	Type      string          `json:"type"`
	Time      time.Time       `json:"time"`
	SessionID string          `json:"session_id,omitempty"`
	ProjectID string          `json:"project_id,omitempty"`
	Message   string          `json:"message,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	// UID is the owner of the session, used to show users only their own.
	UID int `json:"-"`
}

// Version is the daemon's version information.
type Version struct {
	Version string `json:"version"`
	API     string `json:"api"`
	PID     int    `json:"pid"`
	Socket  string `json:"socket"`
	// Mode is "system" for a daemon run as root (it serves every user),
	// else "user"; StateDir is where it keeps sessions.
	Mode     string `json:"mode,omitempty"`
	StateDir string `json:"state_dir,omitempty"`
	// Containment is what the daemon contains its sessions in.
	Containment *Containment `json:"containment,omitempty"`
}

// Health is the daemon's liveness report.
type Health struct {
	Status string `json:"status"`
	// Warning is what the daemon warns every caller of, as the
	// Sessiond-Warning header says it ("" for nothing).
	Warning  string    `json:"warning,omitempty"`
	Sessions int       `json:"sessions"`
	Live     int       `json:"live"`
	Since    time.Time `json:"since"`
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Candidates lists the matches of an ambiguous id prefix.
	Candidates []string `json:"candidates,omitempty"`
}

// Report is what the agent told sessiond about its work, through
// sessionctl report; later reports replace the fields they give, except
// blockers: Blockers adds questions (each gets an id) and Resolve resolves
// open ones by id ("3", or "all").
type Report struct {
	Summary    string   `json:"summary,omitempty"`
	Next       []string `json:"next,omitempty"`
	Blockers   []string `json:"blockers,omitempty"`
	Resolve    []string `json:"resolve,omitempty"`
	Plan       string   `json:"plan,omitempty"`
	Progress   *float64 `json:"progress,omitempty"`
	Task       string   `json:"task,omitempty"`
	Step       string   `json:"step,omitempty"`
	Status     string   `json:"status,omitempty"`
	LastAction string   `json:"last_action,omitempty"`
	// At is when the last report came.
	At time.Time `json:"at,omitzero"`
}

// WarningText is the notice an agent is given at its warning, in the
// event, warning.json and the agent hook output.
func WarningText(deadline, now time.Time) string {
	left := deadline.Sub(now).Round(time.Second)
	if left <= 0 {
		// A deadline that passed while no daemon ran: the stop follows.
		return fmt.Sprintf("sessiond: this session's deadline (%s) has passed: it is being stopped now. Write down what you did and what comes next (sessionctl report --summary ... --next ...) if you still can.",
			deadline.Format(time.RFC3339))
	}
	return fmt.Sprintf("sessiond: this session will be stopped in %s (at %s). Wrap up now: checkpoint or commit your work, write down what you did and what comes next (sessionctl report --summary ... --next ...), and leave the project in a state the next session can resume from.",
		left, deadline.Format(time.RFC3339))
}

// ProjectID is a project's id: the first 12 hex digits of the sha256 of
// its absolute, symlink-resolved path.
func ProjectID(dir string) string {
	sum := sum256.Sum([]byte(dir))
	return hex.EncodeToString(sum[:])[:12]
}

// Project is a directory sessiond has run sessions in.
type Project struct {
	ID       string    `json:"id"`
	Dir      string    `json:"dir"`
	Sessions int       `json:"sessions"`
	Live     int       `json:"live"`
	LastEnd  time.Time `json:"last_end,omitzero"`
	// LastSession is the id of the project's newest session.
	LastSession string `json:"last_session,omitempty"`
}

// ResolveRequest resolves a project's open blockers: their ids, or "all".
type ResolveRequest struct {
	Dir     string   `json:"dir,omitempty"`
	Resolve []string `json:"resolve"`
}

// ResolveResponse says what a resolve did: the blockers resolved, those
// still open, and the live sessions that were told ([] when the project
// had none, and its session state was changed instead).
type ResolveResponse struct {
	Resolved []Blocker `json:"resolved"`
	Open     []Blocker `json:"open"`
	Sessions []string  `json:"sessions"`
}

// RestoreRequest asks to restore a project's work tree to a checkpoint.
type RestoreRequest struct {
	Dir        string `json:"dir,omitempty"`
	Checkpoint string `json:"checkpoint"`
	Force      bool   `json:"force,omitempty"`
}

// RestoreResponse says what a restore did: the checkpoint of the tree as
// it was, and the checkpoint restored.
type RestoreResponse struct {
	Saved    CheckpointResult `json:"saved"`
	Restored Checkpoint       `json:"restored"`
}
