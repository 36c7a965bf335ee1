package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// serveMetrics answers GET /v1/metrics when the daemon has metrics on.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ ipc.Caller) error {
	if s.metrics == nil {
		return ipc.NotFound("metrics are off: set metrics = true in the daemon's config file and restart sessiond (docs/metrics.md)")
	}
	s.metrics.ServeHTTP(w, r)
	return nil
}

// MetricsServer serves GET /v1/metrics alone over TCP (metrics_listen),
// for a Prometheus that cannot reach the Unix socket. It has no peer
// credentials to check: bind it to loopback or another trusted address.
// The metrics hold counts only, no session ids, names or paths.
type MetricsServer struct {
	l    net.Listener
	http *http.Server
}

// ListenMetrics listens on the TCP address addr ("127.0.0.1:9477") for
// scrapes of h.
func ListenMetrics(addr string, h http.Handler, log *zap.Logger) (*MetricsServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics_listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	path := "/" + ipc.APIVersion + "/metrics"
	mux.Handle("GET "+path, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, ipc.NotFound("this address serves only GET %s", path))
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          zap.NewStdLog(log.Named("metrics")),
	}
	return &MetricsServer{l: l, http: srv}, nil
}

// Addr returns the address it listens on (the port, when addr asked for 0).
func (m *MetricsServer) Addr() net.Addr { return m.l.Addr() }

// Serve answers scrapes until Shutdown.
func (m *MetricsServer) Serve() error {
	err := m.http.Serve(m.l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops listening and waits for scrapes in flight until ctx ends.
func (m *MetricsServer) Shutdown(ctx context.Context) error {
	if err := m.http.Shutdown(ctx); err != nil {
		return m.http.Close()
	}
	return nil
}
