package term

import (
	"fmt"
	"os"
	"syscall"
)

func waitBlocking(p *os.Process) (syscall.WaitStatus, error) {
	st, err := p.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait for pid %d: %w", p.Pid, err)
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return 0, fmt.Errorf("wait for pid %d: no wait status", p.Pid)
	}
	return ws, nil
}
