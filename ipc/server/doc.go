// Package server is the HTTP-over-Unix-socket server of sessiond's API: the
// one table of every /v1 route (routes.go), the adapters from requests to
// the interfaces of package ipc that the daemon implements, and the socket
// itself (Listen, peer credentials, bounds on connections).
//
// Identity is attached to each connection from its peer credentials
// (SO_PEERCRED), and a caller the access function refuses gets 403 before
// any handler runs; the decision is logged. Bodies are bounded, decoded
// strictly (unknown fields are errors), and every response carries the
// daemon's version header. The package knows nothing of processes or files.
package server
