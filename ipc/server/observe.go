package server

import "net/http"

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes and
// write deadlines of streams).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// routeOf names the route a request was answered by: the route table's
// pattern, "unmatched" for a path outside it, "refused" for a caller
// turned away before routing. Patterns, not paths, so that session ids
// never become labels.
func routeOf(r *http.Request) string {
	switch r.Pattern {
	case "":
		return "refused"
	case "/":
		return "unmatched"
	}
	return r.Pattern
}
