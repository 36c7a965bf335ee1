//go:build pprof

package server

import (
	"net/http"
	"net/http/pprof"
)

// profileRoutes are Go's profiles, in a build with the pprof tag.
var profileRoutes = map[string]http.HandlerFunc{
	"GET /debug/pprof/":        pprof.Index,
	"GET /debug/pprof/profile": pprof.Profile,
	"GET /debug/pprof/symbol":  pprof.Symbol,
	"GET /debug/pprof/trace":   pprof.Trace,
}
