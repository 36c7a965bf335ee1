package ipc

import "encoding/json"

// Route is one route of the API, as the server registers it and
// /v1/openapi.json describes it: its method and path (the server's
// pattern), what it takes and answers (zero values of the wire types; nil
// for none), and an example of each that decodes into them.
type Route struct {
	Method, Path string
	Summary      string
	// Query are its query parameters.
	Query []Param
	// Request is the body's type; Batch another body it takes in its
	// place (a list of starts).
	Request, Batch any
	// Status is its success status; Response the body's type (nil: none,
	// or Stream's).
	Status   int
	Response any
	// Stream is the media type of a body that is not one JSON value: a
	// log ("text/plain"), the events ("application/x-ndjson"), an upgrade
	// to the terminal protocol (TermUpgrade).
	Stream string
	// RequestExample and ResponseExample are JSON that decodes into
	// Request and Response, field for field.
	RequestExample, ResponseExample json.RawMessage
}

// Param is a query parameter: its name, what it says, and whether it is
// a flag (1 or absent).
type Param struct {
	Name, Description string
	Flag              bool
}

// Pattern is the route's pattern for net/http's ServeMux.
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// Routes is the one table of the API (DESIGN §5.3): the server registers
// exactly these, and the OpenAPI document is made from them.
var Routes = []Route{
	{Method: "GET", Path: "/v1/sessions", Summary: "List sessions: the live ones, with all=1 every one kept; a restart chain is one row unless chains=1",
		Query: []Param{{Name: "all", Description: "ended sessions too", Flag: true}, {Name: "chains", Description: "every session of a restart chain", Flag: true},
			{Name: "stats", Description: "each live session's CPU and memory (usage)", Flag: true}, {Name: "project", Description: "only the sessions of this directory"},
			{Name: "view", Description: "row: the fields a table shows (SessionRow)"}},
		Status: 200, Response: []Session{}},
	{Method: "POST", Path: "/v1/sessions", Summary: "Start a session (or, with a list, a batch of them)",
		Request: StartRequest{}, Batch: []StartRequest{}, Status: 201, Response: StartResponse{},
		RequestExample:  json.RawMessage(`{"dir":"/home/me/src/app","command":["claude","-p","go on"],"timeout":"2h","pool":"nightly","on_limit":"wait"}`),
		ResponseExample: json.RawMessage(`{"session":{"id":"k53nt9x3","name":"app","project_dir":"/home/me/src/app","project_id":"4d6ff1c6e3e3","command":["claude","-p","go on"],"state":"running","pid":4242,"started_at":"2026-12-02T06:00:00Z","ended_at":null,"deadline":"2026-12-02T08:00:00Z","warn_at":"2026-12-02T07:30:00Z","end_reason":"","exit_code":null,"signal":"","restarts":0,"restart_of":"","last_activity":null,"last_file_edited":"","files_changed":[],"checkpoints":0,"last_checkpoint":"","log_path":"/home/me/.local/state/sessiond/sessions/k53nt9x3/output.log","seq":1,"uid":1000}}`)},
	{Method: "POST", Path: "/v1/sessions/stop", Summary: "Stop several sessions at once; answers once every end is on disk",
		Query:   []Param{{Name: "view", Description: "brief: each end as a StopBrief, not its whole record"}},
		Request: StopBatchRequest{}, Status: 200, Response: []StopResult{}, RequestExample: json.RawMessage(`{"ids":["k53nt9x3","web"],"grace":"5s"}`)},
	{Method: "POST", Path: "/v1/sessions/prune", Summary: "Remove the caller's ended sessions, or those that ended before older_than",
		Request: PruneRequest{}, Status: 200, Response: PruneResponse{}, RequestExample: json.RawMessage(`{"older_than":"168h"}`), ResponseExample: json.RawMessage(`{"removed":["k53nt9x3"]}`)},
	{Method: "GET", Path: "/v1/sessions/{id}", Summary: "A session's record (an id, a unique prefix, or a name)", Status: 200, Response: Session{}},
	{Method: "DELETE", Path: "/v1/sessions/{id}", Summary: "Remove an ended session's record, logs and handoff archive", Status: 204},
	{Method: "POST", Path: "/v1/sessions/{id}/stop", Summary: "Stop a session: its stop signal, grace, SIGKILL; answers once its end is on disk",
		Request: StopRequest{}, Status: 200, Response: Session{}, RequestExample: json.RawMessage(`{"grace":"5s"}`)},
	{Method: "POST", Path: "/v1/sessions/{id}/signal", Summary: "Send a signal to the session's process group",
		Request: SignalRequest{}, Status: 204, RequestExample: json.RawMessage(`{"signal":"SIGUSR1"}`)},
	{Method: "POST", Path: "/v1/sessions/{id}/restart", Summary: "Stop the session if it runs, then start its spec again as its successor",
		Request: RestartRequest{}, Status: 201, Response: StartResponse{}, RequestExample: json.RawMessage(`{"grace":"5s"}`)},
	{Method: "POST", Path: "/v1/sessions/{id}/extend", Summary: "Move the deadline and the warning later",
		Request: ExtendRequest{}, Status: 200, Response: Session{}, RequestExample: json.RawMessage(`{"by":"30m"}`)},
	{Method: "POST", Path: "/v1/sessions/{id}/report", Summary: "What the agent reports from inside the session",
		Request: Report{}, Status: 200, Response: Report{}, RequestExample: json.RawMessage(`{"summary":"JWT refresh done","next":["Fix JWT validation"],"progress":68}`)},
	{Method: "POST", Path: "/v1/sessions/{id}/checkpoint", Summary: "Take a checkpoint of the session's project now", Status: 200, Response: CheckpointResult{}},
	{Method: "POST", Path: "/v1/sessions/{id}/agent/hook", Summary: "One payload of the session's agent's hooks",
		Request: AgentHookRequest{}, Status: 200, Response: AgentHookResponse{},
		RequestExample:  json.RawMessage(`{"agent":"claude-code","payload":"{\"hook_event_name\":\"Stop\"}"}`),
		ResponseExample: json.RawMessage(`{"event":"Stop","state":"idle"}`)},
	{Method: "GET", Path: "/v1/sessions/{id}/handoff", Summary: "The session's handoff", Status: 200, Response: Handoff{}},
	{Method: "GET", Path: "/v1/sessions/{id}/briefing", Summary: "What the session started from, for its agent", Status: 200, Response: Briefing{}},
	{Method: "GET", Path: "/v1/sessions/{id}/logs", Summary: "The session's output, as text unless raw=1",
		Query: []Param{{Name: "follow", Description: "until the session ends", Flag: true}, {Name: "tail", Description: "the last N lines"},
			{Name: "timestamps", Description: "each line with the time it was written", Flag: true}, {Name: "since", Description: "a duration before now or an RFC 3339 time"},
			{Name: "until", Description: "a duration before now or an RFC 3339 time"}, {Name: "raw", Description: "the bytes as written", Flag: true}},
		Status: 200, Stream: "text/plain"},
	{Method: "GET", Path: "/v1/sessions/{id}/screen", Summary: "A terminal session's screen",
		Query: []Param{{Name: "scrollback", Description: "lines of history above the screen"}}, Status: 200, Response: TermScreen{}},
	{Method: "POST", Path: "/v1/sessions/{id}/send", Summary: "Type into a terminal session",
		Request: SendRequest{}, Status: 204, RequestExample: json.RawMessage(`{"text":"yes","enter":true}`)},
	{Method: "GET", Path: "/v1/sessions/{id}/attach", Summary: "Attach to a terminal session (Upgrade: sessiond-term)",
		Query: []Param{{Name: "read_only", Description: "watch without typing", Flag: true}}, Status: 101, Stream: TermUpgrade},
	{Method: "GET", Path: "/v1/projects", Summary: "The projects sessions ran in", Status: 200, Response: []Project{}},
	{Method: "GET", Path: "/v1/projects/{id}/session", Summary: "A project's session state",
		Query: []Param{{Name: "dir", Description: "the project's directory"}, {Name: "format", Description: "json (the state), summary or full"}}, Status: 200, Response: ProjectSession{}},
	{Method: "DELETE", Path: "/v1/projects/{id}/session", Summary: "Delete a project's session state",
		Query: []Param{{Name: "dir", Description: "the project's directory"}}, Status: 204},
	{Method: "GET", Path: "/v1/projects/{id}/checkpoints", Summary: "A project's checkpoints",
		Query:  []Param{{Name: "dir", Description: "the project's directory"}, {Name: "prune", Description: "first keep only the newest N of each session"}, {Name: "find", Description: "the checkpoint an id names now"}},
		Status: 200, Response: []Checkpoint{}},
	{Method: "GET", Path: "/v1/projects/{id}/checkpoints/stats", Summary: "What a project's checkpoints hold on disk",
		Query: []Param{{Name: "dir", Description: "the project's directory"}}, Status: 200, Response: CheckpointStats{}},
	{Method: "POST", Path: "/v1/projects/{id}/restore", Summary: "Checkpoint the tree, then restore it to a checkpoint",
		Query: []Param{{Name: "dir", Description: "the project's directory"}}, Request: RestoreRequest{}, Status: 200, Response: RestoreResponse{}},
	{Method: "POST", Path: "/v1/projects/{id}/resolve", Summary: "Resolve a project's open blockers",
		Query: []Param{{Name: "dir", Description: "the project's directory"}}, Request: ResolveRequest{}, Status: 200, Response: ResolveResponse{},
		RequestExample: json.RawMessage(`{"resolve":["2"]}`)},
	{Method: "GET", Path: "/v1/notify", Summary: "The notification rules that apply, and the notifier's counters",
		Query: []Param{{Name: "dir", Description: "the project"}}, Status: 200, Response: NotifyStatus{}},
	{Method: "POST", Path: "/v1/notify/test", Summary: "Send the sample event through a rule, or every rule",
		Request: NotifyTestRequest{}, Status: 200, Response: NotifyTestResponse{}},
	{Method: "GET", Path: "/v1/queue", Summary: "The pools, and the queued sessions in the order they will start", Status: 200, Response: QueueListing{},
		ResponseExample: json.RawMessage(`{"pools":[{"name":"nightly","max_running":3,"stagger_ms":30000,"running":3,"queued":1}],"queued":[{"id":"f5xmcz0k","name":"api","command":["claude","-p","job"],"state":"queued","end_reason":"","pid":0,"started_at":"2026-12-02T06:00:00Z","ended_at":null,"deadline":"0001-01-01T00:00:00Z","restarts":0,"last_activity":null,"checkpoints":0,"project_dir":"/home/me/src/api","pool":"nightly","queue":{"pool":"nightly","place":1,"priority":0,"since":"2026-12-02T06:00:00Z","why":"pool nightly is full (3 of max_running 3)","reason":"pool"}}]}`)},
	{Method: "GET", Path: "/v1/worktrees", Summary: "The worktrees of parallel sessions",
		Query: []Param{{Name: "repo", Description: "only this repository's"}}, Status: 200, Response: []WorktreeInfo{}},
	{Method: "DELETE", Path: "/v1/worktrees/{name}", Summary: "Remove a worktree",
		Query:  []Param{{Name: "repo", Description: "the repository"}, {Name: "force", Description: "uncommitted work too, after a checkpoint of it", Flag: true}},
		Status: 200, Response: WorktreeRemoved{}},
	{Method: "GET", Path: "/v1/events", Summary: "The event stream, one JSON event per line",
		Query: []Param{{Name: "follow", Description: "new events as they happen", Flag: true}}, Status: 200, Stream: "application/x-ndjson", Response: Event{}},
	{Method: "GET", Path: "/v1/version", Summary: "The daemon's version, mode and state dir", Status: 200, Response: Version{}},
	{Method: "GET", Path: "/v1/health", Summary: "The daemon's liveness", Status: 200, Response: Health{},
		ResponseExample: json.RawMessage(`{"status":"ok","sessions":12,"live":3,"since":"2026-12-02T05:35:32Z"}`)},
	{Method: "GET", Path: "/v1/metrics", Summary: "Prometheus metrics (metrics = true)", Status: 200, Stream: "text/plain"},
	{Method: "GET", Path: "/v1/openapi.json", Summary: "This API as OpenAPI 3.1", Status: 200, Stream: "application/json"},
}
