package session

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/state"
)

// EnvBase is the environment a child inherits before sessiond's own
// variables: the daemon's, then the spec's env.
func EnvBase(spec config.Spec) []string {
	env := os.Environ()
	for _, k := range sortedKeys(spec.Env) {
		env = append(env, k+"="+spec.Env[k])
	}
	return env
}

// env is the child's full environment (DESIGN §5.4).
func (s *Session) env() []string {
	env := EnvBase(s.spec)
	if cred := s.credential(); cred != nil {
		if u, err := user.LookupId(strconv.Itoa(int(cred.Uid))); err == nil {
			env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
		}
	}
	pdir := filepath.Join(s.projectDir, state.DirName)
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
	return dedupeEnv(env)
}

// credential returns the credential to run the session as its owner when
// the daemon runs as root for another user, else nil.
func (s *Session) credential() *syscall.Credential {
	return Credential(s.uid)
}

// Credential returns the credential (uid, primary gid, groups) to run a
// process as uid when the daemon is root and uid is another user, else nil.
func Credential(uid int) *syscall.Credential {
	if os.Geteuid() != 0 || uid == 0 {
		return nil
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if gid, err := strconv.Atoi(u.Gid); err == nil {
			cred.Gid = uint32(gid)
		}
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
	}
	return cred
}

// own hands files the daemon writes into a project to the session's user,
// when a root daemon runs the session for someone else: the agent must be
// able to read its context and state, and the user to remove them.
func (s *Session) own(paths ...string) {
	cred := s.credential()
	if cred == nil {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(cred.Uid), int(cred.Gid)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("hand file to the session's user", zap.String("path", p), zap.Error(err))
		}
	}
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
