package session

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// SeekTail positions f at the start of its last n lines.
func SeekTail(f *os.File, n int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	const chunk = 16 * 1024
	lines := 0
	pos := fi.Size()
	buf := make([]byte, chunk)
	// A final newline ends the last line rather than starting another.
	skipLast := true
	for pos > 0 {
		step := min(int64(chunk), pos)
		pos -= step
		if _, err := f.ReadAt(buf[:step], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		b := buf[:step]
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				skipLast = false
				continue
			}
			if skipLast {
				skipLast = false
				continue
			}
			lines++
			if lines == n {
				_, err := f.Seek(pos+int64(i)+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// tailLines returns the last n lines of the session's log.
func (s *Session) tailLines(n int) []string {
	f, err := os.Open(s.logPath())
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := SeekTail(f, n); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 64*1024))
	if err != nil {
		return nil
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return []string{}
	}
	lines := bytes.Split(data, []byte("\n"))
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}
