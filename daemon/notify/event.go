package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/identity"
)

// Event is something that happened to a session that a person may want to
// hear of. Type is one of the config.Notify* event names; the rest says
// which session and how, with the fields that do not apply left empty.
type Event struct {
	Type      string
	Time      time.Time
	SessionID string
	// Name is the session's name.
	Name       string
	ProjectDir string
	ProjectID  string
	// EndReason is set for ended events: complete, error, timeout, ...
	EndReason string
	// ExitCode is the exit code when known (nil when a signal killed the
	// process or the status is unknown).
	ExitCode *int
	// Signal names the signal that killed the process, if one did.
	Signal string
	// HandoffFile is the path of the session's handoff.json, once written.
	HandoffFile string
	// Deadline is the session's deadline (for warned), if it has one.
	Deadline time.Time
	// Message is the one-line description of the event stream.
	Message string
	// Link opens the session's page on the web listener ("" when it has
	// none).
	Link string
	// Spell identifies one occurrence of a lasting condition, such as the
	// time the agent started waiting: an event with the type, session and
	// spell of an earlier one is a repeat, and is not sent again.
	Spell string

	// Owner is the user the session belongs to; commands run as this user
	// when the daemon is root. Nil means the daemon's own user.
	Owner *Owner
	// Env is the environment commands start from (the session's, so that a
	// hook sees what the session sees); nil means the daemon's. It is never
	// sent to a webhook.
	Env []string
	// LogPath, when set, is a file (the session's log) that a command's
	// output is appended to; otherwise the output is kept for the error.
	LogPath string
}

// Owner is the user a session runs as: what a root daemon needs to run a
// command with that user's rights (identity.User).
type Owner = identity.User

// LookupOwner returns the Owner for uid from the user database.
func LookupOwner(uid int) (*Owner, error) { return identity.Lookup(uid) }

// SampleEvent returns the event "sessionctl notify test" sends: a session
// that ended with an error, marked as a test. Callers set Owner and
// ProjectDir to the user and directory the test is for.
func SampleEvent() Event {
	code := 1
	return Event{
		Type:      config.NotifyTest,
		Time:      time.Now(),
		SessionID: "test0000",
		Name:      "notify-test",
		EndReason: "error",
		ExitCode:  &code,
		Message:   "test notification from sessiond",
	}
}

// PayloadVersion is the version of Payload. It grows only when a field
// changes meaning or goes away; new fields may appear within a version.
const PayloadVersion = 1

// Payload is what a webhook with the json template POSTs and what a command
// reads on stdin: the event, flattened, with a title and text made for
// people. Every field is always present (empty or null when it does not
// apply); docs/notifications.md documents each.
type Payload struct {
	Version     int        `json:"version"`
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	Time        time.Time  `json:"time"`
	Host        string     `json:"host"`
	Rule        string     `json:"rule"`
	SessionID   string     `json:"session_id"`
	SessionName string     `json:"session_name"`
	ProjectDir  string     `json:"project_dir"`
	ProjectID   string     `json:"project_id"`
	EndReason   string     `json:"end_reason"`
	ExitCode    *int       `json:"exit_code"`
	Signal      string     `json:"signal"`
	HandoffFile string     `json:"handoff_file"`
	Deadline    *time.Time `json:"deadline"`
	Message     string     `json:"message"`
	Title       string     `json:"title"`
	Text        string     `json:"text"`
	// Link opens the session on the web listener's page, when there is one.
	Link string `json:"link,omitempty"`
}

// NewPayload builds the payload of ev as sent by the rule named rule, from
// host.
func NewPayload(ev Event, rule, host string) Payload {
	p := Payload{
		Version: PayloadVersion, Event: ev.Type, Time: ev.Time, Host: host, Rule: rule,
		SessionID: ev.SessionID, SessionName: ev.Name, ProjectDir: ev.ProjectDir, ProjectID: ev.ProjectID,
		EndReason: ev.EndReason, ExitCode: ev.ExitCode, Signal: ev.Signal, HandoffFile: ev.HandoffFile,
		Message: ev.Message, Title: Title(ev), Text: Text(ev), Link: ev.Link,
	}
	if !ev.Deadline.IsZero() {
		d := ev.Deadline
		p.Deadline = &d
	}
	// The id is derived, not random: every retry of one delivery carries
	// the same id, so a receiver can drop the repeats.
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d\x00%s", rule, ev.Type, ev.SessionID, ev.Time.UnixNano(), ev.Spell))
	p.ID = hex.EncodeToString(h[:16])
	return p
}

// who names the session in a title: its name, else its id.
func who(ev Event) string {
	if ev.Name != "" {
		return ev.Name
	}
	if ev.SessionID != "" {
		return ev.SessionID
	}
	return "(unknown)"
}

// Title is a one-line summary of ev for a notification's title.
func Title(ev Event) string {
	s := who(ev)
	switch ev.Type {
	case config.NotifyStarted:
		return "Session " + s + " started"
	case config.NotifyRestarted:
		return "Session " + s + " restarted"
	case config.NotifyWarned:
		return "Session " + s + " is near its deadline"
	case config.NotifyAgentWaiting:
		return "Session " + s + " is waiting for input"
	case config.NotifyEnded:
		return "Session " + s + " ended: " + endText(ev)
	case config.NotifyFailed:
		return "Session " + s + " failed"
	case config.NotifyRestartLimit:
		return "Session " + s + " will not be restarted"
	case config.NotifyCheckpointFailed:
		return "Checkpoint failed in session " + s
	case config.NotifyBudget:
		return "Session " + s + " is near its budget"
	case config.NotifyAgentLimited:
		return "Session " + s + " hit a usage limit"
	case config.NotifyAgentStalled:
		return "Session " + s + " has stalled"
	case config.NotifyAgentRetrying:
		return "Session " + s + " is retrying its API"
	case config.NotifyTest:
		return "sessiond test notification"
	}
	return "Session " + s + ": " + ev.Type
}

// endText describes how a session ended: "error (exit 2)".
func endText(ev Event) string {
	r := ev.EndReason
	if r == "" {
		r = "unknown"
	}
	switch {
	case ev.Signal != "":
		return r + " (" + ev.Signal + ")"
	case ev.ExitCode != nil && *ev.ExitCode != 0:
		return r + " (exit " + strconv.Itoa(*ev.ExitCode) + ")"
	}
	return r
}

// Text is the body of a notification about ev: the message, the project and
// where the handoff is.
func Text(ev Event) string {
	var lines []string
	if ev.Message != "" {
		lines = append(lines, ev.Message)
	}
	if ev.ProjectDir != "" {
		lines = append(lines, "project: "+ev.ProjectDir)
	}
	if ev.HandoffFile != "" {
		lines = append(lines, "handoff: "+ev.HandoffFile)
	}
	return strings.Join(lines, "\n")
}

// urgent reports whether ev calls for a person now: a failure, a crash, or
// an agent waiting for an answer.
func urgent(ev Event) bool {
	switch ev.Type {
	case config.NotifyFailed, config.NotifyRestartLimit, config.NotifyAgentWaiting, config.NotifyAgentStalled:
		return true
	case config.NotifyEnded:
		switch ev.EndReason {
		case "complete", "interrupted", "idle":
			return false
		}
		return true
	}
	return false
}
