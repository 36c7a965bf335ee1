//go:build !linux

package term

// readOutput reads the master and hands each read to take, until the
// terminal is closed or the holder is done. The master blocks here (see
// pollable), so each read is written to the log before the next.
func (h *holder) readOutput() {
	buf := make([]byte, 8<<10)
	for {
		n, err := h.master.Read(buf)
		if n > 0 {
			if !h.take(buf[:n]) {
				return
			}
			h.caughtUp()
		}
		if err != nil {
			return
		}
	}
}
