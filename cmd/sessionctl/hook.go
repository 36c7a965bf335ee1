package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// hookTimeout bounds what a hook does: an agent waits for its hooks.
const hookTimeout = 5 * time.Second

// contextEvents are the Claude Code hook events whose output may add
// context to the conversation.
var contextEvents = map[string]bool{"PostToolUse": true, "UserPromptSubmit": true, "SessionStart": true}

// hookCmd is what sessiond installs in the agents it runs: each hook event
// goes to the daemon as the agent gave it. A hook never fails the agent:
// outside a session, with the daemon away or a payload refused, it says
// so on stderr and exits 0.
func (a *app) hookCmd() *cobra.Command {
	hook := &cobra.Command{
		Use:   "hook",
		Short: "Pass an agent's hook events to sessiond (installed by sessiond; never fails the agent)",
	}
	var event string
	cc := &cobra.Command{
		Use:   "claude-code",
		Short: "A Claude Code hook: reads the event on stdin, tells sessiond, prints the warning as added context",
		Long: "A Claude Code hook command. sessiond installs it (through --settings) for SessionStart,\n" +
			"UserPromptSubmit, PreToolUse, PermissionRequest, PostToolUse, Notification, Stop, PreCompact and\n" +
			"SessionEnd; each event's JSON on stdin goes to the daemon, which learns the conversation, the\n" +
			"agent's state and its usage. Once the session is warned the next SessionStart, UserPromptSubmit or\n" +
			"PostToolUse answers with the warning as hookSpecificOutput.additionalContext.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			payload := readPayload(cmd.InOrStdin())
			resp := a.sendHook(cmd.Context(), "claude-code", payload)
			if resp == nil || resp.Context == "" {
				return nil
			}
			ev := resp.Event
			if ev == "" {
				ev = event
			}
			if !contextEvents[ev] {
				return nil
			}
			return a.printJSON(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": ev, "additionalContext": resp.Context}})
		},
	}
	cc.Flags().StringVar(&event, "event", "PostToolUse", "the hook event, for a payload that does not say")
	_ = cc.Flags().MarkHidden("event")
	cx := &cobra.Command{
		Use:   "codex [-- PROGRAM ARGS...] PAYLOAD",
		Short: "A Codex notify program: tells sessiond of the event, then runs the user's own notify program",
		Long: "A Codex notify program (-c notify=[...]). sessiond installs it; Codex gives it each event as\n" +
			"JSON in its last argument. A notify program of the user's own, after --, is run with the same\n" +
			"argument first.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			payload := args[len(args)-1]
			if n := cmd.ArgsLenAtDash(); n >= 0 && len(args)-1 > n {
				runUserNotify(cmd.Context(), args[n:len(args)-1], payload, cmd.ErrOrStderr())
			}
			if len(payload) > ipc.MaxHookPayload {
				payload = payload[:ipc.MaxHookPayload]
			}
			a.sendHook(cmd.Context(), "codex", payload)
			return nil
		},
	}
	hook.AddCommand(cc, cx)
	return hook
}

// readPayload reads a hook's stdin, up to what is sent.
func readPayload(r io.Reader) string {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(r, ipc.MaxHookPayload))
	// The rest is not read: the agent may close the pipe without waiting.
	return string(b)
}

// sendHook passes a payload to the daemon and returns its answer, nil when
// there is none to act on (said on stderr, which the agent keeps as the
// hook's log).
func (a *app) sendHook(ctx context.Context, agentName, payload string) *ipc.AgentHookResponse {
	id := os.Getenv("SESSIOND_SESSION_ID")
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	resp, err := a.client.AgentHook(ctx, id, ipc.AgentHookRequest{Agent: agentName, Payload: payload})
	if err == nil {
		return resp
	}
	if errors.Is(err, ipc.ErrConflict) {
		// A session whose agent sessiond does not know (a hook the user
		// installed by hand): the warning still reaches the agent.
		if rec, err := a.client.Session(ctx, id); err == nil && rec.State == ipc.StateWarned {
			return &ipc.AgentHookResponse{Event: hookEventName(payload), Context: ipc.WarningText(rec.Deadline, time.Now())}
		}
		return nil
	}
	fmt.Fprintf(a.errOut, "sessionctl hook %s: %v\n", agentName, err)
	return nil
}

// hookEventName is the hook_event_name of a Claude Code payload, or "".
func hookEventName(payload string) string {
	var in struct {
		Event string `json:"hook_event_name"`
	}
	if json.NewDecoder(strings.NewReader(payload)).Decode(&in) != nil {
		return ""
	}
	return in.Event
}

// runUserNotify runs the user's own Codex notify program with the payload
// as its last argument, bounded in time; its output goes to stderr.
func runUserNotify(ctx context.Context, argv []string, payload string, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], payload)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "sessionctl hook codex: notify program %s: %v\n", argv[0], err)
	}
	if out.Len() > 0 {
		_, _ = stderr.Write(out.Bytes())
	}
}
