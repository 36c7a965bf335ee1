package session

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// Sidecar readiness: the default wait, and how often a check is retried.
const (
	defaultReadyTimeout = 30 * time.Second
	readyCheckEvery     = 100 * time.Millisecond
)

// sidecar is a running [[service]] of a session, such as a dev server.
type sidecar struct {
	svc   config.Service
	child *proc.Child
	log   string
}

// startSidecars starts the spec's services, each in its own process group
// with the session's environment and its output in service-NAME.log, and
// waits until each is ready. On failure the ones started are stopped.
func (s *Session) startSidecars(ctx context.Context) error {
	for _, svc := range s.spec.Services {
		sc, err := s.startSidecar(ctx, svc)
		if err != nil {
			s.stopSidecars()
			if s.startCtx.Err() != nil {
				return ipc.Conflict("session %s was stopped while starting (waiting for service %q)", s.id, svc.Name)
			}
			return ipc.BadRequest("service %q: %w", svc.Name, err)
		}
		s.sidecars = append(s.sidecars, sc)
	}
	return nil
}

func (s *Session) startSidecar(ctx context.Context, svc config.Service) (*sidecar, error) {
	logPath := filepath.Join(s.dir, "service-"+svc.Name+".log")
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	env := append(s.env(), "SESSIOND_SERVICE="+svc.Name)
	if len(svc.Command) == 0 {
		return nil, fmt.Errorf("service %s: empty command: %w", svc.Name, proc.ErrNotFound)
	}
	path, err := s.files().LookPath(svc.Command[0], s.projectDir, env)
	if err != nil {
		return nil, err
	}
	child, err := proc.Spawn(proc.Spec{Argv: svc.Command, Path: path, Dir: s.projectDir, Env: env, Output: out, Credential: s.credential(), Cgroup: s.cg, Leaf: cgroup.LeafSidecars})
	if err != nil {
		return nil, err
	}
	sc := &sidecar{svc: svc, child: child, log: logPath}
	timeout := svc.ReadyTimeout.Duration
	if timeout <= 0 {
		timeout = defaultReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitReady(ctx, sc); err != nil {
		s.stopSidecar(sc)
		return nil, err
	}
	s.logger().Info("service ready", zap.String("service", svc.Name), zap.Int("pid", child.PID))
	return sc, nil
}

// waitReady waits until the service's ready check passes: a TCP port that
// accepts, an HTTP URL that answers below 500, or a regular expression that
// matches its output. No check means ready once started.
func waitReady(ctx context.Context, sc *sidecar) error {
	check, err := readyCheck(sc)
	if err != nil || check == nil {
		return err
	}
	t := time.NewTicker(readyCheckEvery)
	defer t.Stop()
	for {
		if check(ctx) {
			return nil
		}
		select {
		case <-sc.child.Done():
			return fmt.Errorf("exited before it was ready (%s); its output is in %s", describeExit(sc.child.Exit()), sc.log)
		case <-ctx.Done():
			return fmt.Errorf("not ready (%s) within its ready_timeout; its output is in %s", sc.svc.Ready, sc.log)
		case <-t.C:
		}
	}
}

func readyCheck(sc *sidecar) (func(context.Context) bool, error) {
	ready := sc.svc.Ready
	switch {
	case ready == "":
		return nil, nil
	case strings.HasPrefix(ready, "tcp://"):
		addr := strings.TrimPrefix(ready, "tcp://")
		return func(ctx context.Context) bool {
			d := net.Dialer{Timeout: 500 * time.Millisecond}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, nil
	case strings.HasPrefix(ready, "http://") || strings.HasPrefix(ready, "https://"):
		client := &http.Client{Timeout: time.Second}
		return func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode < 500
		}, nil
	}
	re, err := regexp.Compile(ready)
	if err != nil {
		return nil, fmt.Errorf("ready %q is neither tcp://, http:// nor a valid regular expression: %v", ready, err)
	}
	return func(context.Context) bool {
		b, err := os.ReadFile(sc.log)
		return err == nil && re.Match(b)
	}, nil
}

func describeExit(e proc.Exit) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit %d", e.Code)
}

// stopSidecars stops the session's services and reports whether any was
// still running.
func (s *Session) stopSidecars() (wereRunning bool) {
	for _, sc := range s.sidecars {
		select {
		case <-sc.child.Done():
		default:
			wereRunning = true
		}
		s.stopSidecar(sc)
	}
	if s.cg != nil && !s.groupGone() && s.cg.Populated(cgroup.LeafSidecars) {
		// Whatever the services (or the setup) left goes with them.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.cg.KillLeaf(cgroup.LeafSidecars)
		_ = s.cg.Wait(ctx, cgroup.LeafSidecars)
		cancel()
	}
	s.sidecars = nil
	return wereRunning
}

// stopSidecar sends the stop signal to the service's group, waits up to the
// spec's grace (at most 10 s), then kills what is left of it.
func (s *Session) stopSidecar(sc *sidecar) {
	_ = sc.child.SignalGroup(s.spec.StopSignal.Num)
	grace := min(s.spec.StopGrace.Duration, 10*time.Second)
	select {
	case <-sc.child.Done():
	case <-time.After(grace):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	proc.KillSession(ctx, "", sc.child, true)
	select {
	case <-sc.child.Done():
	case <-ctx.Done():
		_ = sc.child.Signal(unix.SIGKILL)
	}
}
