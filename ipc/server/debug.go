package server

import (
	"net/http"
	"net/http/pprof"
	"os"

	"github.com/sessiond/sessiond/ipc"
)

// PprofEnv, set to 1 in the daemon's environment, serves Go's profiles
// under /debug/pprof/ on the socket, to root and the daemon's own user
// only: for measuring the daemon (bench/README.md), never on by default.
const PprofEnv = "SESSIOND_PPROF"

// registerDebug adds the profile routes when PprofEnv asks for them.
func (s *Server) registerDebug() {
	if os.Getenv(PprofEnv) != "1" {
		return
	}
	self := os.Getuid()
	admin := func(h http.HandlerFunc) handler {
		return func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
			if c.UID != 0 && c.UID != self {
				return ipc.Forbidden("profiles are for root and the daemon's own user")
			}
			h(w, r)
			return nil
		}
	}
	s.handle("GET /debug/pprof/", admin(pprof.Index))
	s.handle("GET /debug/pprof/profile", admin(pprof.Profile))
	s.handle("GET /debug/pprof/symbol", admin(pprof.Symbol))
	s.handle("GET /debug/pprof/trace", admin(pprof.Trace))
}
