package server

import (
	"net/http"
	"os"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// PprofEnv, set to 1 in the daemon's environment, serves Go's profiles
// under /debug/pprof/ on the socket, to root and the daemon's own user
// only: for measuring the daemon (bench/README.md), never on by default.
// Only a daemon built with the pprof tag has them (`make build
// TAGS=pprof`): net/http/pprof and the profile writers it brings are half a
// megabyte of executable, most of which the kernel keeps resident in every
// daemon that links them.
const PprofEnv = "SESSIOND_PPROF"

// registerDebug adds the profile routes when PprofEnv asks for them, and
// says so in the log when this build has none to add.
func (s *Server) registerDebug() {
	if os.Getenv(PprofEnv) != "1" {
		return
	}
	if len(profileRoutes) == 0 {
		s.log.Warn(PprofEnv+"=1, but this sessiond was built without profiles: build it with `make build TAGS=pprof` (go build -tags pprof)",
			zap.String("env", PprofEnv))
		return
	}
	self := os.Getuid()
	for pattern, h := range profileRoutes {
		s.handle(pattern, func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
			if err := profileCaller(c, self); err != nil {
				return err
			}
			h(w, r)
			return nil
		})
	}
}

// profileCaller lets root and the daemon's own user (uid self) read the
// profiles: they show the daemon's memory, and so every session's.
func profileCaller(c ipc.Caller, self int) error {
	if c.UID != 0 && c.UID != self {
		return ipc.Forbidden("profiles are for root and the daemon's own user")
	}
	return nil
}
