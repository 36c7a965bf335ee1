package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// noCgroups is the host of sessions whose deps give none.
var noCgroups = cgroup.Detect(cgroup.Options{Off: true})

// cgroups is what the host offers the session.
func (s *Session) cgroups() *cgroup.Host {
	if s.deps.Cgroups == nil {
		return noCgroups
	}
	return s.deps.Cgroups
}

// memoryWatch is the account of a contained session's memory between two
// polls: the counters when the session began (or the last warning), and
// whether a pressure episode is under way.
type memoryWatch struct {
	oomSeen, highSeen int64
	// episode: a warning was given and pressure has not eased since;
	// calmSince is when it last eased (zero: it has not).
	episode   bool
	calmSince time.Time
}

// Pressure thresholds: a share of time stalled on memory (PSI some avg10,
// in percent) that starts an episode, one under which it eases, and how
// long it must stay eased for the episode to end.
const (
	pressureHigh = 40
	pressureLow  = 10
	pressureCalm = time.Minute
)

// makeCgroup makes the session's cgroup with its spec's limits, before
// anything of it runs: a limit the host cannot apply fails the start
// (unless limits = "best-effort").
func (s *Session) makeCgroup() error {
	g, notices, err := s.cgroups().New(s.id, s.spec.Limits)
	if err != nil {
		return ipc.BadRequest("%w", err)
	}
	for _, n := range notices {
		if s.startInfo != nil {
			s.startInfo.Notices = append(s.startInfo.Notices, n)
		}
		s.warnRecord(n)
	}
	if g == nil {
		return nil
	}
	s.cg = g
	s.cgP.Store(g)
	s.rec.Cgroup = g.Record()
	return nil
}

// findCgroup finds the cgroup an earlier daemon recorded for the session.
func (s *Session) findCgroup() {
	if g, ok := s.cgroups().Open(s.rec.Cgroup); ok {
		s.cg = g
		s.cgP.Store(g)
		if m, ok := g.Memory(); ok {
			// What the earlier daemon saw is not news.
			s.cgWatch.oomSeen = m.OOMKills
		}
		_, s.cgWatch.highSeen = g.Pressure()
	}
}

// killContained ends every process in the command's leaf of the session's
// cgroup, escaped from its process group or not, and waits until the leaf
// is empty; false when the session has no cgroup.
func (s *Session) killContained(ctx context.Context) bool {
	g := s.cg
	if g == nil {
		return false
	}
	// Its hooks and notification commands run outside its cgroup, but are
	// the session's.
	proc.KillHelpers(s.id)
	if s.groupGone() {
		// Nothing left: the command went, and took everything along.
		return true
	}
	left := g.Procs(cgroup.LeafCommand)
	if err := g.KillLeaf(cgroup.LeafCommand); err != nil {
		s.logger().Warn("kill the session's cgroup", zap.Error(err))
	}
	if err := g.Wait(ctx, cgroup.LeafCommand); err != nil {
		s.logger().Error("processes of the session survived cgroup.kill", zap.Error(err))
		s.warnRecord("processes of the session outlived the kill of its cgroup: " + err.Error())
		return true
	}
	if n := len(left); n > 0 && s.rec.Cgroup != nil {
		s.rec.Cgroup.Killed += n
	}
	return true
}

// groupGone reports whether the session's whole cgroup holds no process:
// once it holds none, none enters it again (only the daemon puts processes
// in it, at the start), so that the end looks once, not at each leaf and
// then the whole (the kernel's open of cgroup.events was 4 % of a stop of
// a thousand).
func (s *Session) groupGone() bool {
	if !s.cgGone && s.cg != nil && !s.cg.Populated("") {
		s.cgGone = true
	}
	return s.cgGone
}

// closeCgroup ends the session's cgroup once its command and sidecars are
// gone: whatever is left in it is killed, its account taken into the
// record, and the cgroup removed soon after.
func (s *Session) closeCgroup() {
	g := s.cg
	if g == nil {
		return
	}
	empty := s.groupGone()
	if !empty {
		_ = g.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		empty = g.Wait(ctx) == nil
		cancel()
	}
	if m, ok := g.Memory(); ok {
		s.rec.Memory = &m
	}
	if s.rec.Cgroup != nil {
		s.rec.Cgroup.Empty = empty
	}
	if !empty {
		s.warnRecord(fmt.Sprintf("the session's cgroup %s still held processes (%v) after it was killed; it is left in place", g.Dir(), g.Procs("")))
		return
	}
	s.emptied = g
}

// removeCgroup removes the cgroup the end emptied, once ends pause or the
// daemon stops: its rmdir costs the kernel more than any other step of an
// end (bench/README.md, the fifteenth pass), and nothing waits for it. One
// that a crash leaves is the next daemon's sweep's.
func (s *Session) removeCgroup() {
	g := s.emptied
	if g == nil {
		return
	}
	s.emptied = nil
	s.tidy(func() {
		if err := g.Remove(); err != nil {
			s.logger().Warn("remove the session's cgroup", zap.Error(err))
		}
	})
}

// oomReason says whether the kernel's OOM killer killed in the session
// since its start; if so the end is an OOM one and the record tells the
// account of it.
func (s *Session) oomReason(exitText string) bool {
	g := s.cg
	if g == nil {
		return false
	}
	m, ok := g.Memory()
	if !ok || m.OOMKills <= s.cgWatch.oomSeen {
		return false
	}
	s.rec.Memory = &m
	s.warnRecord(oomAccount(s.spec.Limits, m, s.command, exitText))
	return true
}

// oomAccount is what the handoff says of an OOM end.
func oomAccount(l config.Limits, m ipc.Memory, argv []string, exitText string) string {
	bound := "its memory bound"
	if l.MemoryMax > 0 {
		bound = "its memory_max " + config.SizeText(l.MemoryMax)
	}
	what := "a process"
	if m.OOMKills > 1 {
		what = fmt.Sprintf("%d processes", m.OOMKills)
	}
	cmd := "the command"
	if len(argv) > 0 {
		cmd = commandSummary(argv)
	}
	return fmt.Sprintf("the kernel's OOM killer ended %s of the session at %s (peak %s); %s then ended (%s): make the work use less memory, or raise memory_max",
		what, bound, config.SizeText(config.Size(m.PeakBytes)), cmd, exitText)
}

// PollMemory looks at the session's memory once (the sessions service
// calls it every few seconds for each contained session, off the
// session's goroutine): a new OOM kill, memory.high crossed, or pressure
// that stays high begin an episode, and the session is warned once for it.
func (s *Session) PollMemory() {
	g := s.cgP.Load()
	if g == nil || !ipc.Live(s.pub.Load().State) {
		return
	}
	m, known := g.Memory()
	avg10, high := g.Pressure()
	s.memMu.Lock()
	w := &s.cgWatch
	var why string
	switch {
	case known && m.OOMKills > w.oomSeen:
		why = fmt.Sprintf("the kernel's OOM killer ended a process of the session at its memory bound (%s in use)", config.SizeText(config.Size(m.CurrentBytes)))
	case high > w.highSeen:
		why = fmt.Sprintf("the session is above its memory_high %s (%s in use) and is being slowed", config.SizeText(s.spec.MemoryHigh), config.SizeText(config.Size(m.CurrentBytes)))
	case avg10 >= pressureHigh:
		why = fmt.Sprintf("the session stalls on memory %.0f%% of the time", avg10)
	}
	w.oomSeen, w.highSeen = max(w.oomSeen, m.OOMKills), max(w.highSeen, high)
	now := s.deps.Clock.Now()
	switch {
	case why != "" && w.episode:
		// Still the same episode: it was warned of.
		why, w.calmSince = "", time.Time{}
	case why != "":
		w.episode, w.calmSince = true, time.Time{}
	case w.episode && avg10 < pressureLow:
		if w.calmSince.IsZero() {
			w.calmSince = now
		} else if now.Sub(w.calmSince) >= pressureCalm {
			w.episode = false
		}
	}
	s.memMu.Unlock()
	if why != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.deliver(ctx, &memoryRequest{why: why})
		cancel()
	}
}

// memoryRequest is a memory warning for the session's goroutine to give.
type memoryRequest struct{ why string }

func (r *memoryRequest) refuse(error) {}

// warnMemory gives the memory warning: a runaway build can be stopped by
// the agent itself before the kernel kills it.
func (s *Session) warnMemory(why string) {
	text := "sessiond: " + strings.TrimSuffix(why, ".") + ". Stop what is using the memory (a build, a test run, a leak) before the kernel kills it."
	s.give(warning{reason: warnMemory, deadline: s.timeline.deadline, text: text})
}
