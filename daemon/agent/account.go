package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
)

// Account is the identity an agent's use counts against, from the
// environment it runs with: an API key's fingerprint (never the key), else
// its config directory (CLAUDE_CONFIG_DIR or ~/.claude, CODEX_HOME or
// ~/.codex). Sessions of one account share its limits. "" for a command
// that is no agent sessiond knows.
func Account(a Adapter, env []string, uid int) string {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if key, v, ok := strings.Cut(env[i], "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	home := get("HOME")
	if home == "" {
		home = "~" + strconv.Itoa(uid)
	}
	name := a.Name()
	var keyVar, dirVar, dirName string
	switch a {
	case ClaudeCode:
		keyVar, dirVar, dirName = "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", ".claude"
	case Codex:
		keyVar, dirVar, dirName = "OPENAI_API_KEY", "CODEX_HOME", ".codex"
	default:
		return ""
	}
	if k := get(keyVar); k != "" {
		sum := sha256.Sum256([]byte(k))
		return name + ":key-" + hex.EncodeToString(sum[:])[:12]
	}
	if d := get(dirVar); d != "" && filepath.IsAbs(d) {
		return name + ":" + filepath.Clean(d)
	}
	return name + ":" + filepath.Join(home, dirName)
}
