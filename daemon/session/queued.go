package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// A queued session waits for its turn (a slot of its pool, a session it
// starts after, its agent's limit to reset) with its record, its
// environment and its place on disk and no process: the queue (package
// sessions) starts it with Dequeue. A stop cancels it, with nothing to
// write but its record; a daemon that shuts down leaves it queued for the
// next one.

type dequeueRequest struct{ reply chan error }

func (r *dequeueRequest) refuse(err error) { r.reply <- err }

// Enqueue makes a session New made (with Params.Queue) a queued one: its
// directory, environment and record on disk. It is the maker's
// alternative to Start.
func (s *Session) Enqueue() (err error) {
	// A spare directory, as a start takes (its files are the ones a
	// queued session writes too); when it starts, its directory is there
	// and the spare it would take stays one.
	synced, err := s.deps.Records.MakeDir(s.dir)
	if err != nil {
		return fmt.Errorf("create session directory: %w", err)
	}
	if err := s.saveEnviron(); err != nil {
		return errors.Join(err, synced())
	}
	if err := s.commit(); err != nil {
		return errors.Join(fmt.Errorf("write the session record: %w", err), synced())
	}
	if err := synced(); err != nil {
		return err
	}
	s.phase = phaseQueued
	s.emit(ipc.EventQueued, "queued: "+QueueWhy(s.rec.Queue), s.Snapshot())
	s.release()
	return nil
}

// Requeue puts a session an earlier daemon left queued back in the queue.
func (s *Session) Requeue() {
	// Its environment is on disk already; Environ reads it back.
	s.environSaved = true
	s.phase = phaseQueued
	s.release()
}

// Dequeue starts a queued session: it turns starting at once (a reply
// means it no longer waits), and runs as a start does. Started then says
// how the start went.
func (s *Session) Dequeue(ctx context.Context) error {
	r := &dequeueRequest{reply: make(chan error, 1)}
	err, aerr := ask(ctx, s, r, r.reply)
	return errors.Join(aerr, err)
}

// Cancel ends a queued session that can never start, saying why; a
// session that is no longer queued is left as it is.
func (s *Session) Cancel(ctx context.Context, why string) error {
	if s.State() != ipc.StateQueued {
		return nil
	}
	r := &stopRequest{reason: Cancelled, grace: -1, by: -1, why: why, reply: make(chan error, 1)}
	err, aerr := ask(ctx, s, r, r.reply)
	return errors.Join(aerr, err)
}

// stepQueued is the queued session's step.
func (s *Session) stepQueued(ev event) {
	if ev.what != gotRequest {
		return
	}
	switch r := ev.req.(type) {
	case *dequeueRequest:
		s.beginQueuedStart()
		r.reply <- nil
	case *stopRequest:
		s.cancelQueued(r)
	case *leaveRequest:
		// The next daemon finds it queued.
		r.reply <- nil
		s.phase = phaseOver
	default:
		r.refuse(ipc.Conflict("session %s is queued (%s): it runs nothing yet", s.id, QueueWhy(s.rec.Queue)))
	}
}

// beginQueuedStart moves the queued session to its start, its clock from
// now: its deadline the spec's timeout from now, or the one it carries
// (what a session waiting for its limit had left).
func (s *Session) beginQueuedStart() {
	now := s.deps.Clock.Now()
	s.startedAt = now
	s.rec.StartedAt = now
	if s.rec.Deadline.IsZero() {
		s.rec.Deadline, s.rec.WarnAt = s.spec.Deadline(now)
	}
	s.rec.Queue = nil
	s.rec.State = ipc.StateStarting
	s.startCtx, s.cancelStart = context.WithCancel(context.Background())
	s.startInfo = &StartInfo{}
	s.publish()
	s.phase = phaseStarting
	s.work(func() func() {
		err := s.start()
		if err != nil {
			s.undoStart()
		}
		return func() { s.startDone(err) }
	})
}

// cancelQueued ends a queued session that never ran: its record says so,
// and nothing else is written (no handoff: nothing was done).
func (s *Session) cancelQueued(r *stopRequest) {
	now := s.deps.Clock.Now()
	s.rec.State, s.rec.EndReason, s.rec.EndedAt = ipc.StateEnded, string(Cancelled), &now
	switch {
	case r.why != "":
		s.rec.Error = "cancelled while queued: " + r.why
	case r.by >= 0:
		s.rec.Error = fmt.Sprintf("stopped while queued (%s)", QueueWhy(s.rec.Queue))
	default:
		s.rec.Error = fmt.Sprintf("cancelled while queued (%s)", r.reason)
	}
	s.rec.Queue = nil
	_ = s.commit()
	r.reply <- nil
	close(s.started)
	close(s.done)
	s.emit(ipc.EventEnded, "cancelled while queued", s.Snapshot())
	s.logger().Info("queued session cancelled", zap.String("why", s.rec.Error))
	if s.deps.OnEnd != nil {
		s.deps.OnEnd(s)
	}
	s.phase = phaseOver
}

// QueueWhy says what a queued session waits for.
func QueueWhy(q *ipc.QueuePlace) string {
	switch {
	case q == nil:
		return "waiting"
	case q.Why != "":
		return q.Why
	case !q.NotBefore.IsZero():
		return "until " + q.NotBefore.Local().Format(time.TimeOnly)
	case q.After != "":
		return "after " + q.After
	case q.Pool != "":
		return "for a slot of pool " + q.Pool
	}
	return "waiting"
}
