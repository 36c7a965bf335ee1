package agent

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxLineText bounds the prompt and reply lines an Event carries, in
// characters: they go into the record and the handoff, not a transcript.
const MaxLineText = 200

// firstLine is the first non-blank line of s, trimmed and cut to
// MaxLineText characters (with an ellipsis when cut).
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		return cutText(line, MaxLineText)
	}
	return ""
}

// cutText cuts s to at most n characters, marking a cut with "…", and
// replaces invalid UTF-8.
func cutText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ParseConversationID checks that id is a UUID, as Claude Code's and Codex's
// conversation ids are, and returns it in the canonical lowercase form.
func ParseConversationID(id string) (string, error) {
	// uuid.Parse also takes {...} and urn:uuid: forms; an agent is only
	// ever given the plain 36-character one.
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", fmt.Errorf("%w: %q", ErrBadConversationID, cutText(id, 64))
	}
	return u.String(), nil
}

// NewConversationID returns a fresh random (version 4) UUID, for an agent
// that lets its caller choose the conversation id.
func NewConversationID() string { return uuid.NewString() }

// lookupEnv returns key's value in env (K=V, the last one wins, as in
// os/exec), or in this process's environment when env is nil.
func lookupEnv(env []string, key string) string {
	if env == nil {
		return os.Getenv(key)
	}
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// homeDir is the agent's home directory: HOME in env, else this process's.
func homeDir(env []string) string {
	if h := lookupEnv(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// shellQuote quotes s for /bin/sh, which is how Claude Code runs a hook's
// command string.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
