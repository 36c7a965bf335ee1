//go:build !pprof

package server

import "net/http"

// profileRoutes is empty without the pprof tag: see PprofEnv.
var profileRoutes map[string]http.HandlerFunc
