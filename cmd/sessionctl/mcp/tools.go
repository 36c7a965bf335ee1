package mcp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/ipc"
)

// Limits of a report, the daemon's (the seed's): the schema tells the model
// and the SDK checks them before the daemon does.
const (
	maxSummary    = 500
	maxNext       = 5
	maxNextLength = 200
	maxText       = 2000
)

// tools are the server's tools for one session.
type tools struct {
	d Daemon
	o Options
}

// call runs one daemon call under the call timeout, outside a session not
// at all.
func call[T any](t *tools, ctx context.Context, what string, f func(ctx context.Context, session string) (T, error)) (T, error) {
	var zero T
	if t.o.SessionID == "" {
		return zero, ErrNoSession
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.CallTimeout)
	defer cancel()
	v, err := f(ctx, t.o.SessionID)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

func readOnly() *sdk.ToolAnnotations {
	no := false
	return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}
}

func (t *tools) add(s *sdk.Server) {
	sdk.AddTool(s, &sdk.Tool{
		Name:        "time_remaining",
		Title:       "Time remaining",
		Description: "How long this session has before sessiond stops it, whether it was warned (then wrap up now), its token and cost budget, and how much more time the extend tool may still add.",
		Annotations: readOnly(),
	}, t.remaining)
	sdk.AddTool(s, &sdk.Tool{
		Name:        "report",
		Title:       "Report progress",
		Description: "Record what only you know, for the handoff the next session starts from: a summary of what was done, the next actions, blockers to add (questions for a person) or resolve (by id), the plan, percent progress, the current task, the step (N/M) and the task status. Give only the fields that changed; later reports replace them.",
		InputSchema: reportSchema(),
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(bool)},
	}, t.report)
	sdk.AddTool(s, &sdk.Tool{
		Name:        "checkpoint",
		Title:       "Checkpoint now",
		Description: "Take a checkpoint of the project now: a git snapshot of the whole work tree on sessiond's own ref, which never touches your branch, index or files. Nothing is taken when nothing changed since the last one.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(bool)},
	}, t.checkpoint)
	sdk.AddTool(s, &sdk.Tool{
		Name:        "handoff",
		Title:       "Previous handoff and next task",
		Description: "What the previous session of this project left: how it ended, its summary, the task and its status, the recommended next steps and warnings; and the next task of the feature list, the next actions and the open blockers.",
		Annotations: readOnly(),
	}, t.handoff)
}

// addExtend offers the extend tool, saying the cap when it is known.
func (t *tools) addExtend(s *sdk.Server, cap time.Duration, known bool) {
	limit := "The daemon decides how much is allowed (the spec's agent_may_extend)."
	if known {
		limit = fmt.Sprintf("This session's spec lets you extend by %s in all (agent_may_extend); time_remaining says how much is left.", formatDuration(cap))
	}
	sdk.AddTool(s, &sdk.Tool{
		Name:        "extend",
		Title:       "Extend the deadline",
		Description: "Move this session's deadline (and its warning) later, when the work in hand needs a little more time to finish cleanly. " + limit,
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: new(bool)},
	}, t.extend)
}

type noInput struct{}

type remainingOutput struct {
	Message     string   `json:"message" jsonschema:"the result in a sentence, for the model: some clients pass on only the structured result"`
	State       string   `json:"state" jsonschema:"the session's state: running, warned, stopping"`
	Deadline    string   `json:"deadline,omitempty" jsonschema:"when sessiond stops the session (RFC 3339); absent when it has no deadline"`
	WarnAt      string   `json:"warn_at,omitempty" jsonschema:"when the warning comes (RFC 3339)"`
	Left        string   `json:"left" jsonschema:"the time left, such as 1h2m3s"`
	SecondsLeft int64    `json:"seconds_left" jsonschema:"the time left in seconds"`
	Warned      bool     `json:"warned" jsonschema:"whether the session was warned: wrap up now"`
	MayExtend   string   `json:"may_extend" jsonschema:"how much the extend tool may still add; 0s: nothing"`
	Tokens      int64    `json:"tokens" jsonschema:"tokens used so far"`
	MaxTokens   int64    `json:"max_tokens,omitempty" jsonschema:"the token budget, absent when there is none"`
	CostUSD     *float64 `json:"cost_usd,omitempty" jsonschema:"the cost so far in US dollars, when the agent reports it"`
	MaxCostUSD  float64  `json:"max_cost_usd,omitempty" jsonschema:"the cost budget in US dollars, absent when there is none"`
}

func (t *tools) remaining(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, remainingOutput, error) {
	r, err := call(t, ctx, "time remaining", t.d.Remaining)
	if err != nil {
		return nil, remainingOutput{}, err
	}
	left := max(r.Left, 0).Round(time.Second)
	ended := !ipc.Live(r.State)
	if ended {
		left = 0 // an ended session has no time left, whatever its deadline
	}
	out := remainingOutput{
		State: r.State, Deadline: formatTime(r.Deadline), WarnAt: formatTime(r.WarnAt),
		Left: formatDuration(left), SecondsLeft: int64(left / time.Second), Warned: r.Warned,
		MayExtend: formatDuration(max(r.ExtendLeft, 0)),
		Tokens:    r.Budget.Tokens, MaxTokens: r.Budget.MaxTokens, MaxCostUSD: r.Budget.MaxCostUSD,
	}
	if r.Budget.CostKnown {
		c := r.Budget.CostUSD
		out.CostUSD = &c
	}
	var b strings.Builder
	switch {
	case ended:
		fmt.Fprintf(&b, "This session has %s: no time left.", r.State)
	case r.Deadline.IsZero():
		b.WriteString("This session has no deadline.")
	default:
		fmt.Fprintf(&b, "%s left (deadline %s).", out.Left, out.Deadline)
	}
	if r.Warned && !ended {
		b.WriteString(" WARNED: wrap up now, checkpoint or commit your work and report what you did and what comes next.")
	}
	if r.Budget.MaxTokens > 0 {
		fmt.Fprintf(&b, " Tokens: %d of %d.", r.Budget.Tokens, r.Budget.MaxTokens)
	}
	if r.Budget.MaxCostUSD > 0 {
		if r.Budget.CostKnown {
			fmt.Fprintf(&b, " Cost: $%.2f of $%.2f.", r.Budget.CostUSD, r.Budget.MaxCostUSD)
		} else {
			fmt.Fprintf(&b, " Cost budget: $%.2f.", r.Budget.MaxCostUSD)
		}
	}
	out.Message = b.String()
	return textResult(out.Message), out, nil
}

type reportInput struct {
	Summary         string         `json:"summary,omitempty" jsonschema:"what was done in this session, in a sentence or two"`
	Next            []string       `json:"next,omitempty" jsonschema:"the next actions, most urgent first"`
	BlockersAdd     []blockerInput `json:"blockers_add,omitempty" jsonschema:"new questions that need a person"`
	BlockersResolve []int          `json:"blockers_resolve,omitempty" jsonschema:"ids of earlier blockers that are answered now"`
	Plan            string         `json:"plan,omitempty" jsonschema:"the current plan"`
	Progress        *float64       `json:"progress,omitempty" jsonschema:"percent of the work done"`
	Task            string         `json:"task,omitempty" jsonschema:"the task in hand"`
	Step            string         `json:"step,omitempty" jsonschema:"the current step of the task as N/M, such as 3/5"`
	Status          string         `json:"status,omitempty" jsonschema:"the task's status"`
}

type blockerInput struct {
	Question string `json:"question" jsonschema:"what a person must answer or do"`
	Priority string `json:"priority,omitempty" jsonschema:"how urgent it is"`
}

var (
	stepPattern = regexp.MustCompile(`^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$`)
	statuses    = []any{"completed", "in_progress", "blocked", "failed"}
	priorities  = []any{"high", "medium", "low"}
)

// reportSchema is reportInput's inferred schema with the limits added.
func reportSchema() *jsonschema.Schema {
	s, err := jsonschema.For[reportInput](nil)
	if err != nil {
		panic(fmt.Sprintf("report schema: %v", err))
	}
	p := s.Properties
	p["summary"].MaxLength = jsonschema.Ptr(maxSummary)
	p["next"].MaxItems = jsonschema.Ptr(maxNext)
	p["next"].Items.MaxLength = jsonschema.Ptr(maxNextLength)
	p["blockers_add"].MaxItems = jsonschema.Ptr(20)
	p["blockers_add"].Items.Properties["question"].MinLength = jsonschema.Ptr(1)
	p["blockers_add"].Items.Properties["question"].MaxLength = jsonschema.Ptr(maxText)
	p["blockers_add"].Items.Properties["priority"].Enum = priorities
	p["blockers_resolve"].Items.Minimum = jsonschema.Ptr(1.0)
	p["plan"].MaxLength = jsonschema.Ptr(maxText)
	p["task"].MaxLength = jsonschema.Ptr(maxText)
	p["progress"].Minimum = jsonschema.Ptr(0.0)
	p["progress"].Maximum = jsonschema.Ptr(100.0)
	p["step"].Pattern = stepPattern.String()
	p["status"].Enum = statuses
	return s
}

type reportOutput struct {
	Message  string          `json:"message" jsonschema:"the result in a sentence, for the model: some clients pass on only the structured result"`
	Recorded []string        `json:"recorded" jsonschema:"the fields recorded"`
	Blockers []blockerOutput `json:"blockers" jsonschema:"the open blockers after the report"`
}

type blockerOutput struct {
	ID       int    `json:"id"`
	Question string `json:"question"`
	Priority string `json:"priority,omitempty"`
}

func (t *tools) report(ctx context.Context, _ *sdk.CallToolRequest, in reportInput) (*sdk.CallToolResult, reportOutput, error) {
	r, fields, err := in.report()
	if err != nil {
		return nil, reportOutput{}, err
	}
	res, err := call(t, ctx, "report", func(ctx context.Context, session string) (ReportResult, error) {
		return t.d.Report(ctx, session, r)
	})
	if err != nil {
		return nil, reportOutput{}, err
	}
	out := reportOutput{Recorded: fields, Blockers: blockersOut(res.Blockers)}
	out.Message = fmt.Sprintf("Recorded %s; %d open blockers.", strings.Join(fields, ", "), len(res.Blockers))
	return textResult(out.Message), out, nil
}

// report checks the input beyond the schema and converts it.
func (in reportInput) report() (Report, []string, error) {
	r := Report{Summary: strings.TrimSpace(in.Summary), Plan: strings.TrimSpace(in.Plan), Task: strings.TrimSpace(in.Task),
		Progress: in.Progress, Status: in.Status, BlockersResolve: in.BlockersResolve}
	var fields []string
	mark := func(set bool, name string) {
		if set {
			fields = append(fields, name)
		}
	}
	for i, n := range in.Next {
		if n = strings.TrimSpace(n); n == "" {
			return Report{}, nil, fmt.Errorf("next[%d] is empty", i)
		}
		r.Next = append(r.Next, n)
	}
	for i, b := range in.BlockersAdd {
		q := strings.TrimSpace(b.Question)
		if q == "" {
			return Report{}, nil, fmt.Errorf("blockers_add[%d]: the question is empty", i)
		}
		r.BlockersAdd = append(r.BlockersAdd, Blocker{Question: q, Priority: b.Priority})
	}
	for i, id := range in.BlockersResolve {
		if id < 1 {
			return Report{}, nil, fmt.Errorf("blockers_resolve[%d]: %d is not a blocker id", i, id)
		}
	}
	if in.Step != "" {
		m := stepPattern.FindStringSubmatch(in.Step)
		if m == nil {
			return Report{}, nil, fmt.Errorf("step %q: want N/M, such as 3/5", in.Step)
		}
		r.StepCurrent, _ = strconv.Atoi(m[1])
		r.StepTotal, _ = strconv.Atoi(m[2])
		if r.StepTotal == 0 || r.StepCurrent > r.StepTotal {
			return Report{}, nil, fmt.Errorf("step %q: want N/M with 0 ≤ N ≤ M and M ≥ 1", in.Step)
		}
	}
	mark(r.Summary != "", "summary")
	mark(len(r.Next) > 0, "next")
	mark(len(r.BlockersAdd) > 0, "blockers_add")
	mark(len(r.BlockersResolve) > 0, "blockers_resolve")
	mark(r.Plan != "", "plan")
	mark(r.Progress != nil, "progress")
	mark(r.Task != "", "task")
	mark(r.StepTotal > 0, "step")
	mark(r.Status != "", "status")
	if len(fields) == 0 {
		return Report{}, nil, errors.New("nothing to report: give at least one of summary, next, blockers_add, blockers_resolve, plan, progress, task, step, status")
	}
	return r, fields, nil
}

type checkpointOutput struct {
	Message       string `json:"message" jsonschema:"the result in a sentence, for the model: some clients pass on only the structured result"`
	ID            string `json:"id,omitempty" jsonschema:"the checkpoint's commit, absent when none was taken"`
	FilesChanged  int    `json:"files_changed" jsonschema:"files changed since the previous checkpoint"`
	CommitMessage string `json:"commit_message,omitempty" jsonschema:"the checkpoint commit's message"`
	Skipped       string `json:"skipped,omitempty" jsonschema:"why no checkpoint was taken"`
}

func (t *tools) checkpoint(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, checkpointOutput, error) {
	c, err := call(t, ctx, "checkpoint", t.d.Checkpoint)
	if err != nil {
		return nil, checkpointOutput{}, err
	}
	out := checkpointOutput{ID: c.ID, FilesChanged: c.FilesChanged, CommitMessage: c.Message, Skipped: c.Skipped}
	text := fmt.Sprintf("Checkpoint %s taken (%d files changed).", c.ID, c.FilesChanged)
	if c.ID == "" {
		text = "No checkpoint taken: " + c.Skipped
		if c.Skipped == "" {
			text = "No checkpoint taken: nothing changed since the last one."
		}
	}
	out.Message = text
	return textResult(text), out, nil
}

type handoffOutput struct {
	Message     string          `json:"message" jsonschema:"the result in a sentence, for the model: some clients pass on only the structured result"`
	Previous    *previousOutput `json:"previous,omitempty" jsonschema:"the previous session's handoff; absent for the project's first session"`
	NextTask    *taskOutput     `json:"next_task,omitempty" jsonschema:"the most urgent task of the feature list not done yet"`
	NextActions []string        `json:"next_actions,omitempty"`
	Blockers    []blockerOutput `json:"blockers,omitempty" jsonschema:"the open blockers"`
	ProgressPct float64         `json:"progress_pct,omitempty"`
	TasksDone   int             `json:"tasks_done,omitempty"`
	TasksTotal  int             `json:"tasks_total,omitempty"`
}

type previousOutput struct {
	SessionID            string   `json:"session_id"`
	EndedAt              string   `json:"ended_at,omitempty"`
	EndReason            string   `json:"end_reason" jsonschema:"complete, error, timeout, idle, interrupted, crashed, budget or waiting"`
	Summary              string   `json:"summary,omitempty"`
	TaskAttempted        string   `json:"task_attempted,omitempty"`
	TaskStatus           string   `json:"task_status,omitempty"`
	CurrentStep          string   `json:"current_step,omitempty"`
	BlockedReason        string   `json:"blocked_reason,omitempty"`
	RecommendedNextSteps []string `json:"recommended_next_steps,omitempty"`
	Warnings             []string `json:"warnings,omitempty" jsonschema:"what to look at first"`
	UncommittedFiles     []string `json:"uncommitted_files,omitempty"`
	ConversationID       string   `json:"conversation_id,omitempty"`
}

type taskOutput struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Priority    string `json:"priority,omitempty"`
}

func (t *tools) handoff(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, handoffOutput, error) {
	b, err := call(t, ctx, "handoff", t.d.Briefing)
	if err != nil {
		return nil, handoffOutput{}, err
	}
	out := handoffOutput{NextActions: b.NextActions, Blockers: blockersOut(b.Blockers), ProgressPct: b.ProgressPct, TasksDone: b.TasksDone, TasksTotal: b.TasksTotal}
	var text []string
	if h := b.Previous; h != nil {
		out.Previous = &previousOutput{
			SessionID: h.SessionID, EndedAt: formatTime(h.EndedAt), EndReason: h.EndReason, Summary: h.Summary,
			TaskAttempted: h.TaskAttempted, TaskStatus: h.TaskStatus, CurrentStep: h.CurrentStep, BlockedReason: h.BlockedReason,
			RecommendedNextSteps: h.RecommendedNextSteps, Warnings: h.Warnings, UncommittedFiles: h.UncommittedFiles, ConversationID: h.ConversationID,
		}
		line := fmt.Sprintf("The previous session (%s) ended: %s.", h.SessionID, h.EndReason)
		if h.Summary != "" {
			line += " Summary: " + h.Summary
		}
		text = append(text, line)
		for _, w := range h.Warnings {
			text = append(text, "Warning: "+w)
		}
	} else {
		text = append(text, "This is the project's first session under sessiond.")
	}
	if task := b.NextTask; task != nil {
		out.NextTask = &taskOutput{ID: task.ID, Description: task.Description, Priority: task.Priority}
		text = append(text, fmt.Sprintf("Next task: #%s %s", task.ID, task.Description))
	}
	for i, a := range b.NextActions {
		text = append(text, fmt.Sprintf("Next action %d: %s", i+1, a))
	}
	out.Message = strings.Join(text, "\n")
	return textResult(out.Message), out, nil
}

type extendInput struct {
	By string `json:"by" jsonschema:"how much later to move the deadline, such as 15m or 1h"`
}

type extendOutput struct {
	Message   string `json:"message" jsonschema:"the result in a sentence, for the model: some clients pass on only the structured result"`
	Deadline  string `json:"deadline" jsonschema:"the new deadline (RFC 3339)"`
	Left      string `json:"left" jsonschema:"the time left now"`
	MayExtend string `json:"may_extend" jsonschema:"how much more the deadline may still be extended"`
}

func (t *tools) extend(ctx context.Context, _ *sdk.CallToolRequest, in extendInput) (*sdk.CallToolResult, extendOutput, error) {
	by, err := time.ParseDuration(strings.TrimSpace(in.By))
	if err != nil || by <= 0 {
		return nil, extendOutput{}, fmt.Errorf("by %q: want a positive duration, such as 15m or 1h", in.By)
	}
	e, err := call(t, ctx, "extend", func(ctx context.Context, session string) (Extension, error) {
		return t.d.Extend(ctx, session, by)
	})
	if err != nil {
		return nil, extendOutput{}, err
	}
	out := extendOutput{Deadline: formatTime(e.Deadline), Left: formatDuration(max(e.Left, 0).Round(time.Second)), MayExtend: formatDuration(max(e.ExtendLeft, 0))}
	out.Message = fmt.Sprintf("Deadline moved to %s: %s left; %s more may still be added.", out.Deadline, out.Left, out.MayExtend)
	return textResult(out.Message), out, nil
}

func blockersOut(bs []Blocker) []blockerOutput {
	out := make([]blockerOutput, len(bs))
	for i, b := range bs {
		out[i] = blockerOutput(b)
	}
	return out
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func formatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}
