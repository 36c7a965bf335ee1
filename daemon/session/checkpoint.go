package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// ckptState is the session's checkpointing: one checkpoint at a time, taken
// by a worker goroutine so that the session answers while git runs; the
// result comes back as a message.
type ckptState struct {
	// busy is set while a worker runs.
	busy bool
	// why is the running checkpoint's kind.
	why string
	// waiting are requests that came while one ran: they get the next one.
	waiting []*checkpointRequest
	// answering are requests the running one answers.
	answering []*checkpointRequest
	// last is when the last checkpoint was taken (or the start).
	last time.Time
	// startedAt is when the running one began.
	startedAt time.Time
	// mark and base are the watch's mark read with the last checkpoint
	// and that checkpoint's tree: the next one is incremental from them.
	mark watch.Mark
	base string
	// turn is the label of an agent turn's checkpoint that waits for the
	// running one (turnPending).
	turn        string
	turnPending bool
}

// settleTimeout bounds the wait at the end for the watcher to catch up with
// the last writes.
const settleTimeout = 2 * time.Second

type ckptResult struct {
	res checkpoint.Result
	err error
	// mark is the watch's mark the checkpoint's changes reached; valid
	// when incremental.
	mark        watch.Mark
	incremental bool
}

// schedule arms the spec's checkpoint schedule; its ticks reach the
// session's goroutine as coalesced messages.
func (s *Session) schedule() {
	s.ckpt.last = s.startedAt
	if s.spec.Checkpoint == "" {
		return
	}
	s.ticks = make(chan struct{}, 1)
	cancel, err := s.deps.Schedule.Schedule(s.spec.Checkpoint, func() {
		select {
		case s.ticks <- struct{}{}:
		default:
		}
		s.kick()
	})
	if err != nil {
		s.logger().Warn("checkpoint schedule", zap.Error(err))
		return
	}
	s.unschedule = cancel
}

// scheduledCheckpoint takes a checkpoint at a schedule tick, only when the
// watcher saw a change since the last one.
func (s *Session) scheduledCheckpoint() {
	if s.ckpt.busy || (s.watch != nil && !s.watch.ChangedSince(s.ckpt.last)) {
		return
	}
	s.beginCheckpoint("scheduled", "")
}

// requestCheckpoint takes a checkpoint for a request now, or right after
// the one running.
func (s *Session) requestCheckpoint(r *checkpointRequest) {
	if s.ckpt.busy {
		s.ckpt.waiting = append(s.ckpt.waiting, r)
		return
	}
	s.ckpt.answering = append(s.ckpt.answering, r)
	s.beginCheckpoint(r.why, "")
}

func (s *Session) beginCheckpoint(why, turn string) {
	s.ckpt.busy, s.ckpt.why, s.ckpt.startedAt = true, why, s.deps.Clock.Now()
	req := checkpoint.TakeRequest{
		Dir: s.projectDir, SessionID: s.id, Mode: checkpoint.Mode(s.spec.CheckpointMode),
		Message: why + " checkpoint", Turn: turn,
		MaxFileSize: int64(s.spec.CheckpointMaxFile), Ignore: s.spec.Watch.Ignore,
		ShadowRoot: s.shadowRoot(), Credential: s.gitCredential(),
	}
	w, since, base := s.watch, s.ckpt.mark, s.ckpt.base
	if s.ckptDone == nil {
		s.ckptDone = make(chan *ckptResult, 1)
	}
	done := s.ckptDone
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), checkpoint.DefaultTimeout)
		defer cancel()
		var r ckptResult
		if w != nil {
			// What the watcher saw since the last checkpoint makes this
			// one incremental; a failed read is a full scan.
			if ch, err := w.Changes(ctx, since); err == nil {
				req.Changes = &checkpoint.Changes{Base: base, Paths: ch.Paths, Complete: ch.Complete, Incomplete: ch.Incomplete}
				r.mark, r.incremental = ch.Mark, true
			}
		}
		r.res, r.err = s.deps.Checkpoints.Take(ctx, req)
		done <- &r
		s.kick()
	}()
}

// checkpointDone applies a finished checkpoint to the record and answers
// who asked for it; requests that came meanwhile get the next one.
func (s *Session) checkpointDone(r ckptResult) {
	why, started := s.ckpt.why, s.ckpt.startedAt
	s.ckpt.busy = false
	err := r.err
	if err != nil {
		// One line: git's messages span several.
		err = errors.New(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
		s.warnRecord(fmt.Sprintf("%s checkpoint failed at %s: %v", why, started.Format(time.RFC3339), err))
		_ = s.commit()
		s.emit(ipc.EventCheckpoint, "checkpoint failed: "+err.Error(), map[string]any{"error": err.Error()})
	} else {
		s.ckpt.last = started
		if r.incremental {
			s.ckpt.mark, s.ckpt.base = r.mark, r.res.Tree
		}
		if !r.res.Skipped {
			// The watcher's findings go to disk with each checkpoint, so
			// that a crash does not lose them all.
			if s.watch != nil {
				applyStats(&s.rec, s.watch.Stats())
			}
			s.rec.Checkpoints++
			s.rec.LastCheckpoint = r.res.ID
			for _, p := range r.res.LeftOut {
				s.warnRecord("left out of checkpoints (too large or a dependency directory): " + p)
			}
			_ = s.commit()
			s.emit(ipc.EventCheckpoint, fmt.Sprintf("checkpoint %.12s: %s changed", r.res.ID, plural(r.res.FilesChanged, "file")), r.res)
		}
	}
	for _, m := range s.ckpt.answering {
		if err != nil {
			m.refuse(ipc.Conflict("checkpoint of %s failed: %w", s.projectDir, err))
		} else {
			m.reply <- result[checkpoint.Result]{v: r.res}
		}
	}
	s.ckpt.answering = nil
	switch {
	case len(s.ckpt.waiting) > 0:
		s.ckpt.answering, s.ckpt.waiting = s.ckpt.waiting, nil
		s.beginCheckpoint(s.ckpt.answering[0].why, "")
	case s.ckpt.turnPending:
		s.ckpt.turnPending = false
		s.beginCheckpoint("turn", s.ckpt.turn)
	}
}
