package state

import (
	"fmt"
	"path/filepath"
	"strings"
)

// AgentFilePrefix begins the names of the files a session hands its agent
// in .sessiond (agent-<session id>-<name>): a root daemon's own state dir is
// not readable by the user the agent runs as.
const AgentFilePrefix = "agent-"

// agentFileName is the name in .sessiond of the agent's file name of
// session id.
func agentFileName(id, name string) (string, error) {
	if id == "" || name == "" || strings.ContainsAny(id+name, "/\x00") || name == "." || name == ".." {
		return "", fmt.Errorf("agent file %q of session %q: not a plain name", name, id)
	}
	return AgentFilePrefix + id + "-" + name, nil
}

// WriteAgentFile writes a file session id hands its agent (its settings,
// its MCP configuration) into .sessiond, atomically, 0600, with the
// project's user's rights, and returns its path.
func (p *Project) WriteAgentFile(id, name string, data []byte) (string, error) {
	n, err := agentFileName(id, name)
	if err != nil {
		return "", err
	}
	if err := p.writeState(n, data); err != nil {
		return "", err
	}
	return filepath.Join(p.StateDir(), n), nil
}

// RemoveAgentFile removes a file WriteAgentFile wrote; missing is no error.
func (p *Project) RemoveAgentFile(id, name string) error {
	n, err := agentFileName(id, name)
	if err != nil {
		return err
	}
	return p.removeState(n)
}
