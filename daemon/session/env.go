package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// env is the child's full environment (DESIGN §5.4).
func (s *Session) env() []string {
	env := spec.CleanPathFor(spec.BaseEnv(s.spec, s.Environ()), s.owner.ID())
	for _, kv := range s.owner.Env() {
		// The account's login shell where the environment names none: a
		// caller's own SHELL stays.
		if strings.HasPrefix(kv, "SHELL=") && slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "SHELL=") }) {
			continue
		}
		env = append(env, kv)
	}
	pdir := filepath.Join(s.projectDir, state.DirName)
	if s.proj != nil {
		pdir = s.proj.StateDir()
	}
	env = append(env,
		"SESSIOND_SESSION_ID="+s.id,
		"SESSIOND_PROJECT_DIR="+s.projectDir,
		"SESSIOND_DEADLINE="+s.rec.Deadline.Format(time.RFC3339),
		"SESSIOND_WARN_AT="+s.rec.WarnAt.Format(time.RFC3339),
		"SESSIOND_SOCKET="+s.deps.Socket,
		"SESSIOND_CONTEXT_FILE="+filepath.Join(pdir, state.ContextFile),
		"SESSIOND_STATE_FILE="+filepath.Join(pdir, state.SessionStateFile),
	)
	if s.prevHandoff != "" {
		env = append(env, "SESSIOND_HANDOFF_FILE="+s.prevHandoff)
	}
	env = append(env, worktreeEnv(s.rec.Worktree)...)
	return dedupeEnv(env)
}

// credential returns the credential every process of the session runs
// with — its command, preflight, hooks, sidecars — when a root daemon runs
// it for another user, else nil: the same ids its files are written with.
func (s *Session) credential() *syscall.Credential {
	if s.owner == nil {
		return nil
	}
	return s.owner.Credential()
}

// GitAccess is how git runs for owner's project: with owner's credential
// and home, so that git reads the user's own global config and never the
// daemon's, and with the shadow repositories of non-git projects where
// that user's own daemon keeps its state (~/.local/state/sessiond/shadow),
// owned by the user, since git running as the user cannot enter a root
// daemon's state dir. A nil owner (the daemon runs as the user) is the
// daemon's own identity and state dir.
func GitAccess(owner *state.Owner) (cred *checkpoint.Credential, shadowRoot string) {
	if owner == nil {
		return nil, ""
	}
	if owner.Home != "" {
		shadowRoot = filepath.Join(owner.Home, ".local", "state", "sessiond", "shadow")
	}
	return owner, shadowRoot
}

// files reads what the session's user names outside the project (an
// agent's settings, home and transcripts) with that user's rights.
func (s *Session) files() state.Files { return state.FilesOf(s.owner) }

// gitCredential and shadowRoot are the session's GitAccess, looked up once.
func (s *Session) gitCredential() *checkpoint.Credential {
	s.gitOnce.Do(func() { s.gitCred, s.gitShadow = GitAccess(s.owner) })
	return s.gitCred
}

func (s *Session) shadowRoot() string {
	s.gitCredential()
	return s.gitShadow
}

// dedupeEnv keeps the last value of each variable.
func dedupeEnv(env []string) []string {
	seen := map[string]int{}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// NotifyEnv is the environment a notification command of the session
// starts from: what its processes get (DESIGN §5.4) as of rec, to which
// the notifier adds the event's own variables.
func (s *Session) NotifyEnv(rec *ipc.Session) []string {
	pdir := filepath.Join(rec.ProjectDir, state.DirName)
	if s.proj != nil {
		pdir = s.proj.StateDir()
	}
	return append(spec.BaseEnv(s.spec, s.Environ()),
		"SESSIOND_DEADLINE="+rec.Deadline.Format(time.RFC3339),
		"SESSIOND_WARN_AT="+rec.WarnAt.Format(time.RFC3339),
		"SESSIOND_SOCKET="+s.deps.Socket,
		"SESSIOND_CONTEXT_FILE="+filepath.Join(pdir, state.ContextFile),
		"SESSIOND_STATE_FILE="+filepath.Join(pdir, state.SessionStateFile),
	)
}

// HandoffFile is where the ended session's handoff is: the project's,
// else (an unreachable project) the archive in the state dir; "" when
// there is none. The end is on disk before the ended event goes out, so
// it is there to read.
func (s *Session) HandoffFile(rec *ipc.Session) string {
	if rec.HandoffPath != "" {
		return rec.HandoffPath
	}
	archive := filepath.Join(s.dir, "handoff.json")
	if _, err := os.Stat(archive); err == nil {
		return archive
	}
	return ""
}
