package logfile

import (
	"bytes"
	"errors"
	"io"
)

// tailChunk is how much of the stream a backward scan for line starts
// reads at a time.
const tailChunk = 16 << 10

// tailStart returns the stream offset of the start of the last n lines,
// reading backwards through output.log and the rotated files with one
// fixed buffer. A final newline ends the last line rather than starting an
// empty one. With fewer than n lines kept, it is the oldest byte kept.
func (r *Reader) tailStart(n int) (int64, error) {
	pos, err := r.end()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, tailChunk)
	lines := 0
	skipLast := true
	for {
		oldest := r.l.oldest()
		if pos <= oldest {
			return oldest, nil
		}
		step := min(int64(len(buf)), pos-oldest)
		from := pos - step
		if err := r.readFull(buf[:step], from); err != nil {
			if errors.As(err, new(gone)) {
				// Rotated away while scanning: all before pos is gone.
				return r.l.oldest(), nil
			}
			return 0, err
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
				return from + int64(i) + 1, nil
			}
		}
		pos = from
	}
}

// TailLines returns the last n lines of the log, across output.log and the
// rotated files, without their newlines, holding at most maxBytes of them
// in memory: when the last n lines are longer, the oldest are left out, and
// a line longer than maxBytes by itself is cut to its last maxBytes.
func (l *Log) TailLines(n, maxBytes int) ([]string, error) {
	if n <= 0 || maxBytes <= 0 {
		return []string{}, nil
	}
	r, err := l.NewReader(n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	end, err := r.end()
	if err != nil {
		return nil, err
	}
	cut := false
	if end-r.pos > int64(maxBytes) {
		r.pos = end - int64(maxBytes)
		cut = true
	}
	data := make([]byte, end-r.pos)
	got := 0
	for got < len(data) {
		m, err := r.Read(data[got:])
		got += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	data = bytes.TrimSuffix(data[:got], []byte("\n"))
	if len(data) == 0 {
		return []string{}, nil
	}
	parts := bytes.Split(data, []byte("\n"))
	if cut && len(parts) > 1 {
		parts = parts[1:]
	}
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out, nil
}
