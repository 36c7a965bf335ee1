package session

// The session is an actor in the manner of raft's node.run: one loop
// (run) takes what happened to it from one place (next) and hands it to
// the step function of the phase it is in — starting, running, stopping,
// ending — which changes the record, writes it and publishes the snapshot
// readers see. What would block the loop (the start's preflight and
// sidecars, the end's kills, git facts and file writes) runs on a worker
// goroutine, which owns the session's state until it hands back, through
// worked, what it did; meanwhile the loop only answers requests, so that
// a stop sent while the session ends is answered at once, and any other
// request is refused with a conflict that names the end.
//
// A session that nothing happens to holds no goroutine: next parks it when
// nothing is ready, and whatever happens to it wakes it (kick) — its
// child's exit (the reaper's callback), its timers (alarm), a schedule
// tick, a checkpoint's or a worker's result, a request — on a goroutine
// that runs the loop until nothing is left. A thousand idle sessions cost
// their records and timers, not a thousand stacks.

// phase is where the session is in its course.
type phase int

const (
	phaseStarting phase = iota
	phaseRunning
	phaseStopping
	phaseEnding
	// phaseQueued: the session waits for its turn, with no process.
	phaseQueued
	// phaseOver: the course has ended (ended, failed, or left for the
	// next daemon).
	phaseOver
)

// happening is the kind of what next found.
type happening int

const (
	nothing happening = iota
	gotRequest
	gotExit
	gotAlarm
	gotTick
	gotCheckpoint
	gotWork
)

// event is one thing that happened to the session.
type event struct {
	what happening
	req  request
	ckpt *ckptResult
	work func()
}

// run is the session's loop: it takes what happened until nothing is
// left, then parks the session, unless something happened meanwhile. It
// returns parked, or once the course is over.
func (s *Session) run() {
	for {
		seen := s.wakes.Load()
		for {
			ev, ok := s.poll()
			if !ok {
				break
			}
			s.step(ev)
			if s.phase == phaseOver {
				// wakes stays above zero: no kick starts a loop again.
				s.sv.stop()
				close(s.exited)
				return
			}
		}
		// Every wake-up makes its cause visible before it counts: none
		// counted since seen, and poll found nothing, means nothing is
		// left to take.
		if s.wakes.CompareAndSwap(seen, 0) {
			return
		}
	}
}

// poll takes one thing that happened, without waiting for any. While a
// worker runs only requests and the worker's result are taken.
func (s *Session) poll() (event, bool) {
	if !s.working && s.alarmed.Swap(false) {
		return event{what: gotAlarm}, true
	}
	select {
	case r := <-s.inbox:
		return event{what: gotRequest, req: r}, true
	case f := <-s.worked:
		s.working = false
		return event{what: gotWork, work: f}, true
	default:
	}
	if s.working {
		return event{}, false
	}
	select {
	case <-s.exitC():
		return event{what: gotExit}, true
	case <-s.ticks:
		return event{what: gotTick}, true
	case r := <-s.ckptDone:
		return event{what: gotCheckpoint, ckpt: r}, true
	default:
		return event{}, false
	}
}

// exitC is the child's exit while the session waits for it, else nil.
func (s *Session) exitC() <-chan struct{} {
	if s.child == nil || (s.phase != phaseRunning && s.phase != phaseStopping) {
		return nil
	}
	return s.child.Done()
}

// kick wakes the session: a loop starts on a new goroutine unless one runs
// (or the session is held by who sets it up); it never blocks.
func (s *Session) kick() {
	if s.wakes.Add(1) == 1 {
		go s.run()
	}
}

// alarm is the session's timers' function: something may be due.
func (s *Session) alarm() {
	s.alarmed.Store(true)
	s.kick()
}

// release hands the session, set up by its maker (a start or a
// recovery), to its loop: parked, or on a goroutine of its own when
// something woke it meanwhile.
func (s *Session) release() {
	if !s.wakes.CompareAndSwap(1, 0) {
		go s.run()
	}
}

// work runs f on a worker goroutine, which owns the session's state until
// it returns what to apply on the session's goroutine.
func (s *Session) work(f func() func()) {
	if s.worked == nil {
		s.worked = make(chan func(), 1)
	}
	s.working = true
	go func() {
		apply := f()
		s.worked <- apply
		s.kick()
	}()
}

// step hands what happened to the phase's step function.
func (s *Session) step(ev event) {
	if ev.what == gotWork {
		ev.work()
		return
	}
	switch s.phase {
	case phaseStarting:
		s.stepStarting(ev)
	case phaseRunning:
		s.stepRunning(ev)
	case phaseStopping:
		s.stepStopping(ev)
	case phaseEnding:
		s.stepEnding(ev)
	case phaseQueued:
		s.stepQueued(ev)
	default:
		if ev.what == gotRequest {
			ev.req.refuse(ErrEnded)
		}
	}
}
