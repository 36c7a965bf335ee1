package term

// logBatch is the most output the holder keeps for the session's log before
// it writes it (see writeLog).
const logBatch = 64 << 10

// take hands one read of the terminal to handleOutput, under mu; false
// means the holder is done and reading should stop.
func (h *holder) take(p []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false
	}
	h.handleOutput(p)
	return true
}

// caughtUp is called when the terminal's output has paused: what
// the log has been given is written now.
func (h *holder) caughtUp() {
	h.mu.Lock()
	h.flushLog()
	h.mu.Unlock()
}
