package session

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
)

// PendingEnds counts the ends that are recorded but could not be written
// yet (a full disk), for the daemon to say so: in every answer's warning,
// in ps and in its log.
type PendingEnds struct {
	mu       sync.Mutex
	stateDir string
	pending  map[*Session]error
}

// NewPendingEnds returns the count for a daemon whose state dir is
// stateDir.
func NewPendingEnds(stateDir string) *PendingEnds {
	return &PendingEnds{stateDir: stateDir, pending: map[*Session]error{}}
}

// set records s's end as pending with err, or as written with nil.
func (p *PendingEnds) set(s *Session, err error) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.pending, s)
		return
	}
	p.pending[s] = err
}

// Warning says what is pending, "" when nothing is: "state dir full: 3
// ends pending" when what fails is the state dir's lack of room.
func (p *PendingEnds) Warning() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		return ""
	}
	full, stateFull := 0, 0
	var last error
	for _, err := range p.pending {
		last = err
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			full++
			if p.stateDir != "" && strings.Contains(err.Error(), p.stateDir) {
				stateFull++
			}
		}
	}
	n := len(p.pending)
	switch {
	case stateFull > 0:
		return fmt.Sprintf("state dir full: %d %s pending", n, ends(n))
	case full > 0:
		return fmt.Sprintf("disk full: %d %s pending", n, ends(n))
	}
	return fmt.Sprintf("%d %s pending: %v", n, ends(n), last)
}

func ends(n int) string {
	if n == 1 {
		return "end"
	}
	return "ends"
}
