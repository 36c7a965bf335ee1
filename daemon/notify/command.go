package notify

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
)

// defaultCommandTimeout bounds a command sink when its rule gives no timeout.
const defaultCommandTimeout = 30 * time.Second

// commandSink runs a rule's command with the event in its environment and
// as JSON on stdin, as the session's user, in the project directory.
type commandSink struct {
	argv    []string
	timeout time.Duration
}

func (s *commandSink) send(ctx context.Context, d *delivery) error {
	ev := &d.ev
	if err := checkOwner(d.rule.origin, ev.Owner); err != nil {
		return err
	}
	cred := credential(ev.Owner)
	env := append(baseEnv(ev, cred), eventEnv(&d.payload)...)
	stdin, err := encodeJSON(d.payload)
	if err != nil {
		return err
	}
	p := process{argv: s.argv, dir: workDir(ev), env: env, cred: cred, files: state.FilesOf(ev.Owner), stdin: stdin, timeout: s.timeout}
	if ev.LogPath != "" {
		// The session's log exists; a notification never creates it.
		if f, err := os.OpenFile(ev.LogPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			defer f.Close()
			p.output = &cappedWriter{w: f, left: maxCommandOutput}
		}
	}
	_, err = p.run(ctx)
	return err
}

// eventEnv is the event as environment variables. Every variable is set,
// empty when it does not apply, so that one inherited from the session
// (its previous handoff, say) never passes for this event's.
func eventEnv(p *Payload) []string {
	code := ""
	if p.ExitCode != nil {
		code = strconv.Itoa(*p.ExitCode)
	}
	deadline := ""
	if p.Deadline != nil {
		deadline = p.Deadline.Format(time.RFC3339)
	}
	return []string{
		"SESSIOND_EVENT=" + p.Event,
		"SESSIOND_EVENT_TIME=" + p.Time.Format(time.RFC3339Nano),
		"SESSIOND_NOTIFY_ID=" + p.ID,
		"SESSIOND_RULE=" + p.Rule,
		"SESSIOND_SESSION_ID=" + p.SessionID,
		"SESSIOND_SESSION_NAME=" + p.SessionName,
		"SESSIOND_PROJECT_DIR=" + p.ProjectDir,
		"SESSIOND_PROJECT_ID=" + p.ProjectID,
		"SESSIOND_END_REASON=" + p.EndReason,
		"SESSIOND_EXIT_CODE=" + code,
		"SESSIOND_SIGNAL=" + p.Signal,
		"SESSIOND_HANDOFF_FILE=" + p.HandoffFile,
		"SESSIOND_DEADLINE=" + deadline,
		"SESSIOND_MESSAGE=" + p.Message,
		"SESSIOND_TITLE=" + p.Title,
		"SESSIOND_LINK=" + p.Link,
	}
}

// maxCommandOutput bounds what one notification command appends to its
// session's log: after the session's end nothing rotates the log, and a
// command that prints without end would fill the disk until its timeout.
const maxCommandOutput = 1 << 20

// cappedWriter passes on the first left bytes, then one line that says
// the rest was dropped, and takes the rest in silence (the command is not
// cut off by a broken pipe).
type cappedWriter struct {
	w       io.Writer
	left    int
	dropped bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if len(p) <= c.left {
		c.left -= len(p)
		_, err := c.w.Write(p)
		return len(p), err
	}
	if c.left > 0 {
		_, _ = c.w.Write(p[:c.left])
		c.left = 0
	}
	if !c.dropped {
		c.dropped = true
		_, _ = fmt.Fprintf(c.w, "\n[sessiond: the notification command's output past %d MiB is dropped]\n", maxCommandOutput>>20)
	}
	return len(p), nil
}
