package session

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/ipc"
)

// A request is a message to the session's goroutine that wants an answer.
// Each kind is a small type with a reply channel of its own, buffered so
// that the session never waits on who asked; refuse answers any of them
// with an error, so that a phase that does not serve a request says why
// without knowing its kind.
type request interface {
	refuse(err error)
}

type stopRequest struct {
	reason Reason
	grace  time.Duration // -1: the spec's stop_grace
	// by is the uid who asked (-1 the daemon); restart says a restart
	// follows.
	by      int
	restart bool
	// why is what cancels a queued session (Cancel).
	why   string
	reply chan error
}

type leaveRequest struct{ reply chan error }

type extendRequest struct {
	by time.Duration
	// byAgent is an extension the agent asked for; pid is the process that
	// asked. Either way, one asked from inside the session is the agent's,
	// held to the spec's agent_may_extend.
	byAgent bool
	pid     int
	reply   chan result[ipc.Session]
}

type signalRequest struct {
	sig   unix.Signal
	reply chan error
}

type reportRequest struct {
	report ipc.Report
	pid    int  // the reporting process
	root   bool // the caller is root
	reply  chan result[ipc.Report]
}

type checkpointRequest struct {
	why   string
	reply chan result[checkpoint.Result]
}

type hookRequest struct {
	payload []byte
	reply   chan result[ipc.AgentHookResponse]
}

// result is an answer and its error.
type result[T any] struct {
	v   T
	err error
}

func (r *stopRequest) refuse(err error)       { r.reply <- err }
func (r *leaveRequest) refuse(err error)      { r.reply <- err }
func (r *signalRequest) refuse(err error)     { r.reply <- err }
func (r *extendRequest) refuse(err error)     { r.reply <- result[ipc.Session]{err: err} }
func (r *reportRequest) refuse(err error)     { r.reply <- result[ipc.Report]{err: err} }
func (r *checkpointRequest) refuse(err error) { r.reply <- result[checkpoint.Result]{err: err} }
func (r *hookRequest) refuse(err error)       { r.reply <- result[ipc.AgentHookResponse]{err: err} }

// inboxSize is how many requests wait for a busy session before their
// senders wait too (an idle session's inbox is most of what it holds).
const inboxSize = 4

// ErrEnded is returned for a request that reaches a session after its end.
var ErrEnded = errors.New("session has ended")

// deliver puts r in the session's inbox and wakes the session.
func (s *Session) deliver(ctx context.Context, r request) error {
	select {
	case s.inbox <- r:
	default:
		// A full inbox (or none: an ended session's): the session takes
		// what is there while the sender waits.
		s.kick()
		select {
		case s.inbox <- r:
		case <-s.exited:
			return ErrEnded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.kick()
	return nil
}

// ask delivers r and waits for its answer on reply. A session whose course
// ends with r unanswered answers ErrEnded.
func ask[T any](ctx context.Context, s *Session, r request, reply chan T) (T, error) {
	var zero T
	if err := s.deliver(ctx, r); err != nil {
		return zero, err
	}
	select {
	case v := <-reply:
		return v, nil
	case <-s.exited:
		select {
		case v := <-reply:
			return v, nil
		default:
			return zero, ErrEnded
		}
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Stop asks the session to stop: the stop signal, grace (-1: the spec's
// stop_grace), then SIGKILL. It returns once the stop has begun; Done says
// when the end is on disk. A session still starting stops its start; one
// ending already is answered at once, its end under way.
func (s *Session) Stop(ctx context.Context, reason Reason, grace time.Duration) error {
	return s.StopAsked(ctx, StopAsk{Reason: reason, Grace: grace, By: -1})
}

// StopAsk is a stop someone asked for: its reason, grace (-1 the spec's),
// the uid who asked (-1 the daemon) and whether a restart follows.
type StopAsk struct {
	Reason  Reason
	Grace   time.Duration
	By      int
	Restart bool
}

// StopAsked stops the session as Stop does, recording who asked and
// whether a restart is to follow, before the first signal.
func (s *Session) StopAsked(ctx context.Context, a StopAsk) error {
	s.cancelStart()
	r := &stopRequest{reason: a.Reason, grace: a.Grace, by: a.By, restart: a.Restart, reply: make(chan error, 1)}
	err, aerr := ask(ctx, s, r, r.reply)
	return errors.Join(aerr, err)
}

// Leave lets the session's goroutine go without ending the session, which
// an upgraded daemon adopts (on_shutdown = "leave").
func (s *Session) Leave(ctx context.Context) error {
	r := &leaveRequest{reply: make(chan error, 1)}
	err, aerr := ask(ctx, s, r, r.reply)
	return errors.Join(aerr, err)
}

// Extend moves the deadline and the warning later by by; byAgent is the
// agent's own request, capped by the spec's agent_may_extend, as is every
// request of a process of the session (pid; 0 for none), whatever it
// claims.
func (s *Session) Extend(ctx context.Context, by time.Duration, byAgent bool, pid int) (ipc.Session, error) {
	r := &extendRequest{by: by, byAgent: byAgent, pid: pid, reply: make(chan result[ipc.Session], 1)}
	return answer(ask(ctx, s, r, r.reply))
}

// AgentHook applies one payload of the agent's hooks and answers what the
// hook should tell the agent.
func (s *Session) AgentHook(ctx context.Context, payload []byte) (ipc.AgentHookResponse, error) {
	r := &hookRequest{payload: payload, reply: make(chan result[ipc.AgentHookResponse], 1)}
	return answer(ask(ctx, s, r, r.reply))
}

// Signal sends sig to the session's process group.
func (s *Session) Signal(ctx context.Context, sig unix.Signal) error {
	r := &signalRequest{sig: sig, reply: make(chan error, 1)}
	err, aerr := ask(ctx, s, r, r.reply)
	return errors.Join(aerr, err)
}

// Report merges what the agent reports into the record; pid is the
// reporting process, which must belong to the session unless root asks.
func (s *Session) Report(ctx context.Context, rep ipc.Report, pid int, root bool) (ipc.Report, error) {
	r := &reportRequest{report: rep, pid: pid, root: root, reply: make(chan result[ipc.Report], 1)}
	return answer(ask(ctx, s, r, r.reply))
}

// Checkpoint takes a checkpoint of the project now, as the spec takes
// them, whoever asks.
func (s *Session) Checkpoint(ctx context.Context) (checkpoint.Result, error) {
	r := &checkpointRequest{why: "requested", reply: make(chan result[checkpoint.Result], 1)}
	return answer(ask(ctx, s, r, r.reply))
}

// answer unpacks what ask returned for a request with a result.
func answer[T any](r result[T], err error) (T, error) {
	if err != nil {
		return r.v, err
	}
	return r.v, r.err
}
