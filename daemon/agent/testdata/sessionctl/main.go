// Command sessionctl is a recording stand-in for sessionctl in the agent
// adapters' tests: `hook claude-code` and `hook codex` record the payload
// the agent gave them (and run a chained notify program as sessionctl
// must), and `mcp` serves the real MCP server of cmd/sessionctl/mcp over a
// fixed fake daemon, recording every call. It writes its record, JSON
// lines, to log-<SESSIOND_SESSION_ID>.jsonl beside its executable: Codex
// gives an MCP server only the environment it is told to, so the session
// id is all the record can go by.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiond/sessiond/cmd/sessionctl/mcp"
)

var mu sync.Mutex

func record(v map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	exe, _ := os.Executable()
	path := filepath.Join(filepath.Dir(exe), "log-"+os.Getenv("SESSIOND_SESSION_ID")+".jsonl")
	v["pid"] = os.Getpid()
	v["session_env"] = os.Getenv("SESSIOND_SESSION_ID")
	v["socket_env"] = os.Getenv("SESSIOND_SOCKET")
	data, _ := json.Marshal(v)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		return
	}
	defer f.Close()
	f.Write(append(data, '\n'))
}

func main() {
	args := os.Args[1:]
	switch {
	case len(args) >= 2 && args[0] == "hook" && args[1] == "claude-code":
		in, _ := io.ReadAll(io.LimitReader(os.Stdin, 4<<20))
		record(map[string]any{"kind": "hook", "agent": "claude-code", "payload": string(in)})
		// STANDIN_CONTEXT: answer PostToolUse as sessionctl does once the
		// session is warned, with context for the model.
		var ev struct {
			Event string `json:"hook_event_name"`
		}
		if text := os.Getenv("STANDIN_CONTEXT"); text != "" && json.Unmarshal(in, &ev) == nil && ev.Event == "PostToolUse" {
			out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": ev.Event, "additionalContext": text}})
			fmt.Println(string(out))
		}
	case len(args) >= 2 && args[0] == "hook" && args[1] == "codex":
		// sessionctl hook codex [-- PROGRAM ARGS...] PAYLOAD
		rest := args[2:]
		if len(rest) == 0 {
			record(map[string]any{"kind": "hook", "agent": "codex", "error": "no payload"})
			return
		}
		payload := rest[len(rest)-1]
		record(map[string]any{"kind": "hook", "agent": "codex", "payload": payload})
		if len(rest) > 2 && rest[0] == "--" {
			chained := append(append([]string(nil), rest[1:len(rest)-1]...), payload)
			err := exec.Command(chained[0], chained[1:]...).Run()
			record(map[string]any{"kind": "chained", "argv": chained, "error": fmt.Sprint(err)})
		}
	case len(args) == 1 && args[0] == "mcp":
		record(map[string]any{"kind": "mcp_start"})
		err := mcp.ServeStdio(context.Background(), daemon{}, mcp.Options{SessionID: os.Getenv("SESSIOND_SESSION_ID"), Version: "stand-in"})
		record(map[string]any{"kind": "mcp_end", "error": fmt.Sprint(err)})
	default:
		record(map[string]any{"kind": "unknown", "argv": args})
		os.Exit(2)
	}
}

// daemon is a fixed session: an hour left, not warned, 30 minutes the
// agent may extend.
type daemon struct{}

var deadline = time.Now().Add(time.Hour)

func (daemon) Remaining(ctx context.Context, session string) (mcp.Remaining, error) {
	record(map[string]any{"kind": "mcp_call", "method": "Remaining", "session": session})
	return mcp.Remaining{State: "running", Deadline: deadline, Left: time.Until(deadline), ExtendCap: 30 * time.Minute, ExtendLeft: 30 * time.Minute}, nil
}

func (daemon) Report(ctx context.Context, session string, r mcp.Report) (mcp.ReportResult, error) {
	record(map[string]any{"kind": "mcp_call", "method": "Report", "session": session, "summary": r.Summary})
	return mcp.ReportResult{}, nil
}

func (daemon) Checkpoint(ctx context.Context, session string) (mcp.Checkpoint, error) {
	record(map[string]any{"kind": "mcp_call", "method": "Checkpoint", "session": session})
	return mcp.Checkpoint{Skipped: "nothing changed"}, nil
}

func (daemon) Briefing(ctx context.Context, session string) (mcp.Briefing, error) {
	record(map[string]any{"kind": "mcp_call", "method": "Briefing", "session": session})
	return mcp.Briefing{}, nil
}

func (daemon) Extend(ctx context.Context, session string, by time.Duration) (mcp.Extension, error) {
	record(map[string]any{"kind": "mcp_call", "method": "Extend", "session": session, "by": by.String()})
	return mcp.Extension{Deadline: deadline.Add(by), Left: time.Until(deadline.Add(by))}, nil
}
