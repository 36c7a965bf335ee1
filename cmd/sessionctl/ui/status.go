package ui

import "strings"

// statusKind is how an action stands.
type statusKind int

const (
	statusNone statusKind = iota
	statusInfo
	statusRunning
	statusDone
	statusFailed
)

// status is the line that tells what the last action did, with the
// sessionctl command that does the same.
type status struct {
	kind    statusKind
	command string
	text    string
}

func running(command string) status { return status{kind: statusRunning, command: command} }

func info(text string) status { return status{kind: statusInfo, text: text} }

func (s status) render(m *model) string {
	switch s.kind {
	case statusRunning:
		return m.st.warn.Render("… ") + "$ " + s.command
	case statusDone:
		return m.st.good.Render("✓ ") + "$ " + s.command + m.st.faint.Render(": ") + s.text
	case statusFailed:
		t := m.st.bad.Render("✗ ")
		if s.command != "" {
			t += "$ " + s.command + m.st.faint.Render(": ")
		}
		return t + m.st.bad.Render(s.text)
	case statusInfo:
		return s.text
	}
	return m.st.faint.Render("sessiond on " + line(m.opt.Socket) + " · ? help")
}

// ctl writes the sessionctl command line that does what an action does.
func (m *model) ctl(args ...string) string {
	all := []string{"sessionctl"}
	host := ""
	if m.opt.HostStates != nil {
		// The session an action is about (its id is one of the words):
		// its host's context.
		for _, a := range args {
			if s := m.sessions[a]; s != nil {
				host = s.Host
			}
		}
	}
	switch {
	case host != "":
		all = append(all, "--context", host)
	case m.opt.Host != "":
		all = append(all, "--host", m.opt.Host)
	case m.opt.SocketGiven:
		all = append(all, "--socket", m.opt.Socket)
	}
	return line(commandLine(append(all, args...)))
}

// firstLine is the first line of an error message, for the status line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return line(s)
}
