package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// limitRecord is what a record says of its agent's limit and its queue.
type limitRecord struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	EndReason string    `json:"end_reason"`
	RestartOf string    `json:"restart_of"`
	Deadline  time.Time `json:"deadline"`
	StartedAt time.Time `json:"started_at"`
	Pool      string    `json:"pool"`
	Agent     *struct {
		State          string `json:"state"`
		ConversationID string `json:"conversation_id"`
		ResumedFrom    string `json:"resumed_from"`
		Account        string `json:"account"`
		Limit          *struct {
			Class         string    `json:"class"`
			ResetsAt      time.Time `json:"resets_at"`
			Continue      string    `json:"continue"`
			ContinueAt    time.Time `json:"continue_at"`
			PausedSeconds int64     `json:"paused_seconds"`
			Source        string    `json:"source"`
		} `json:"limit"`
	} `json:"agent"`
	Queue *struct {
		Place     int       `json:"place"`
		Pool      string    `json:"pool"`
		Reason    string    `json:"reason"`
		NotBefore time.Time `json:"not_before"`
	} `json:"queue"`
	Warning *struct {
		Reason string `json:"reason"`
	} `json:"warning"`
}

func (d *daemon) limitRecord(id string) limitRecord {
	d.t.Helper()
	var rec limitRecord
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return rec
}

// successor waits for the session that continues id (restart_of) and
// returns its id.
func (d *daemon) successor(id string, timeout time.Duration) string {
	d.t.Helper()
	var next string
	waitFor(d.t, timeout, "the session that continues "+id, func() (bool, string) {
		for _, r := range d.list(true) {
			if r.RestartOf == id {
				next = r.ID
				return true, ""
			}
		}
		return false, "none yet; " + id + " is " + d.inspect(id).State
	})
	return next
}

// TestLimitClaudeWaitResumes: the Claude Code stand-in's turn fails at its
// usage limit (StopFailure rate_limit, the reset 30 s ahead) and it exits.
// The session ends limit with a handoff that says when it goes on; its
// continuation is queued with the conversation, shown limited (quota,
// resets HH:MM:SS) in ps, its deadline moved by the wait; a notification
// goes out; at the reset it runs with --resume of the same conversation.
func TestLimitClaudeWaitResumes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	hook := filepath.Join(t.TempDir(), "limited.out")
	writeFile(t, filepath.Join(dir, "sessiond.toml"), `[session]
limit_jitter = "1s"

[[notify]]
on = ["agent_limited"]
command = ["sh", "-c", "cat > `+hook+`"]
`)
	a := newAgentSetup(t, "prompt,tool,limit=quota:30,exit=1;prompt,stop,exit")
	first := d.start(append(a.flags, "--timeout", "1h", dir, "--", "claude", "-p", "build it")...)
	startedDeadline := d.limitRecord(first).Deadline
	end := d.waitEnded(first, 20*time.Second)
	if end.EndReason != "limit" {
		t.Fatalf("the session ended %q, want limit", end.EndReason)
	}
	rec := d.limitRecord(first)
	lim := rec.Agent.Limit
	if lim == nil || lim.Class != "quota" || lim.Continue != "resume" || lim.ResetsAt.IsZero() {
		t.Fatalf("the agent's limit: %+v", lim)
	}
	if wait := time.Until(lim.ResetsAt); wait < 15*time.Second || wait > 31*time.Second {
		t.Errorf("resets in %s, want about 30s", wait)
	}
	if moved := rec.Deadline.Sub(startedDeadline); moved < 25*time.Second || moved > 35*time.Second {
		t.Errorf("the deadline moved by %s, want by the wait (about 30s)", moved)
	}
	handoff, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil || !strings.Contains(string(handoff), "usage limit (quota") || !strings.Contains(string(handoff), "resumes its conversation at") {
		t.Errorf("the handoff does not say when the work goes on (%v):\n%s", err, handoff)
	}
	waitFor(t, 10*time.Second, "the agent_limited notification", func() (bool, string) {
		b, _ := os.ReadFile(hook)
		return strings.Contains(string(b), "agent_limited"), string(b)
	})

	next := d.successor(first, 10*time.Second)
	q := d.limitRecord(next)
	if q.State != "queued" || q.Queue == nil || q.Queue.Reason != "limit" || !q.Deadline.Equal(rec.Deadline) {
		t.Errorf("the continuation: state %s queue %+v deadline %s, want queued for the limit with deadline %s", q.State, q.Queue, q.Deadline, rec.Deadline)
	}
	ps := d.mustCtl("ps")
	if !regexp.MustCompile(`queued #1·limited \(quota, resets \d\d:\d\d:\d\d\)`).MatchString(ps) {
		t.Errorf("ps does not show the session limited:\n%s", ps)
	}
	if strings.Contains(ps, first) {
		t.Errorf("ps shows the ended session beside its continuation:\n%s", ps)
	}

	done := d.waitEnded(next, 50*time.Second)
	if done.EndReason != "complete" {
		t.Errorf("the continuation ended %q, want complete", done.EndReason)
	}
	cont := d.limitRecord(next)
	if cont.StartedAt.Before(lim.ResetsAt) {
		t.Errorf("the continuation started at %s, before the reset %s", cont.StartedAt, lim.ResetsAt)
	}
	if cont.Agent.ConversationID != rec.Agent.ConversationID || cont.Agent.ResumedFrom != rec.Agent.ConversationID {
		t.Errorf("the continuation runs conversation %q (resumed from %q), want %s", cont.Agent.ConversationID, cont.Agent.ResumedFrom, rec.Agent.ConversationID)
	}
	starts := agenttest.Find(agenttest.ReadLog(t, a.log), "start")
	if len(starts) != 2 || !slices.Contains(starts[1].Argv, "--resume") || !slices.Contains(starts[1].Argv, rec.Agent.ConversationID) {
		t.Errorf("the agent's runs: %v, want the second with --resume %s", starts, rec.Agent.ConversationID)
	}
}
