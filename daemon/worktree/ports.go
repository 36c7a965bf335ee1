package worktree

import (
	"fmt"
	"net"
	"strconv"

	"github.com/sessiond/sessiond/config"
)

// Hold gives the worktree k a port of r for holder (a session id) and
// returns it: the port it holds already, else its last one if that is
// free, else the first free one. Free means held by no other worktree of
// the index and bound by no program at the time (both the IPv4 and the
// dual-stack wildcard address can be bound). A zero range holds nothing
// and returns 0. The index is written before the port is handed out.
func (m *Manager) Hold(k Key, holder string, r config.PortRange) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return 0, fmt.Errorf("worktree %s: %w", k, ErrUnknown)
	}
	if e.State == StateRemoving {
		return 0, fmt.Errorf("worktree %s: %w (being removed)", k, ErrBusy)
	}
	old := *e
	port, err := m.pickLocked(e, r)
	if err != nil {
		return 0, err
	}
	e.Port, e.Holder = port, holder
	if holder != "" {
		e.Session = holder
	}
	if err := m.saveLocked(); err != nil {
		*e = old
		return 0, err
	}
	return port, nil
}

// pickLocked chooses e's port; m.mu is held.
func (m *Manager) pickLocked(e *Entry, r config.PortRange) (int, error) {
	if r.IsZero() {
		return 0, nil
	}
	held := map[int]bool{}
	for _, o := range m.entries {
		if o != e && o.Port != 0 {
			held[o.Port] = true
		}
	}
	if e.Port != 0 && r.Contains(e.Port) && !held[e.Port] {
		return e.Port, nil
	}
	if r.Contains(e.LastPort) && !held[e.LastPort] && portFree(e.LastPort) {
		return e.LastPort, nil
	}
	bound := 0
	for p := r.First; p <= r.Last; p++ {
		if held[p] {
			continue
		}
		if portFree(p) {
			return p, nil
		}
		bound++
	}
	return 0, fmt.Errorf("port_range %s: %w: %d ports held by other worktrees, %d bound by other programs; widen port_range or remove worktrees (sessionctl worktrees)",
		r, ErrNoPort, len(held), bound)
}

// portFree reports whether nothing listens on port: it can be bound on
// the IPv4 wildcard and on the dual-stack one.
func portFree(port int) bool {
	for _, addr := range []string{"0.0.0.0:" + strconv.Itoa(port), "[::]:" + strconv.Itoa(port)} {
		network := "tcp4"
		if addr[0] == '[' {
			network = "tcp"
		}
		l, err := net.Listen(network, addr)
		if err != nil {
			if network == "tcp" && !ipv6Available() {
				continue
			}
			return false
		}
		l.Close()
	}
	return true
}

// ipv6Available reports whether the machine has an IPv6 loopback.
func ipv6Available() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Release lets go of the port worktree k holds for holder (a port held by
// another holder stays); the worktree keeps it as its last port. Releasing
// what is not held is no error.
func (m *Manager) Release(k Key, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok || e.Port == 0 || e.Holder != holder {
		return nil
	}
	old := *e
	e.LastPort, e.Port, e.Holder = e.Port, 0, ""
	if err := m.saveLocked(); err != nil {
		*e = old
		return err
	}
	return nil
}
