package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// MaxTranscriptLine bounds the memory one transcript line may take. A longer
// line (a tool call writing a large file) is not kept whole: its first and
// last bytes are, and the adapter reads what it can from them (Claude's
// usage sits at the end of its assistant lines).
const MaxTranscriptLine = 8 << 20

const (
	overlongHead = 4 << 10
	overlongTail = 64 << 10
	readChunk    = 64 << 10
)

// Transcript reads an agent's transcript (JSON lines) as it grows: each Read
// goes on from where the last one stopped and reads only the bytes appended
// since. It is not safe for concurrent use; the session that owns it calls
// Read when the agent says something happened (a hook, a turn's end) or the
// file changed.
//
// It tolerates what a live or damaged file can be: missing (ErrNoTranscript,
// the usage so far kept), a last line still being written (kept until its
// newline comes, or taken as it is when it is complete JSON at the end of
// the file), truncated or replaced (read again from its start, its usage
// added to what was counted before, so that a budget never goes back),
// lines that are not JSON (skipped) and over-long lines (bounded).
type Transcript struct {
	path string
	dec  lineDecoder
	opts TranscriptOptions

	fi       os.FileInfo
	off      int64
	pending  []byte
	overlong bool
	long     int64 // length so far of the over-long line
	head     []byte
	tail     []byte
	base     Usage
	buf      []byte

	// per Read
	events   []Event
	notices  []string
	bad      int
	longSeen int
}

// TranscriptUpdate is what one Read found.
type TranscriptUpdate struct {
	// Usage is the transcript's whole usage so far, not the increment.
	Usage Usage
	// Events are what the appended lines say, in order (Codex's turn
	// starts and ends; Claude Code's come through its hooks instead).
	Events []Event
	// Notices say what was amiss: a truncated or replaced file, skipped
	// lines.
	Notices []string
}

// lineDecoder is an adapter's reading of its transcript's lines.
type lineDecoder interface {
	// line reads one complete line; ok is false when the line should have
	// been readable and was not.
	line(b []byte, opts TranscriptOptions) (events []Event, ok bool)
	// overlong reads what it can of a line longer than MaxTranscriptLine
	// from its first and last bytes.
	overlong(head, tail []byte)
	// usage is the usage of the lines read since the last reset.
	usage() Usage
	// reset forgets every line read, for a file read again from its start.
	reset()
}

func newTranscript(path string, dec lineDecoder, opts TranscriptOptions) *Transcript {
	return &Transcript{path: path, dec: dec, opts: opts}
}

// Path is the transcript's file.
func (t *Transcript) Path() string { return t.path }

// Offset is how far the file has been read.
func (t *Transcript) Offset() int64 { return t.off }

// Usage is the usage counted so far, without reading.
func (t *Transcript) Usage() Usage { return t.base.Add(t.dec.usage()) }

// Read reads what was appended since the last Read. On an error the update
// still holds the usage so far and whatever was read before the error.
func (t *Transcript) Read(ctx context.Context) (TranscriptUpdate, error) {
	t.events, t.notices, t.bad, t.longSeen = nil, nil, 0, 0
	err := t.read(ctx)
	if t.bad > 0 {
		t.notices = append(t.notices, fmt.Sprintf("transcript %s: %d lines could not be read and were skipped", t.path, t.bad))
	}
	if t.longSeen > 0 {
		t.notices = append(t.notices, fmt.Sprintf("transcript %s: %d lines longer than %d MiB were read for their usage only", t.path, t.longSeen, MaxTranscriptLine>>20))
	}
	return TranscriptUpdate{Usage: t.Usage(), Events: t.events, Notices: t.notices}, err
}

func (t *Transcript) read(ctx context.Context) error {
	f, err := filesOr(t.opts.Files).Open(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s: %w", ErrNoTranscript, t.path, fs.ErrNotExist)
		}
		return fmt.Errorf("read transcript %s: %w", t.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read transcript %s: %w", t.path, err)
	}
	switch {
	case t.fi != nil && !os.SameFile(t.fi, fi):
		t.restart(fmt.Sprintf("transcript %s was replaced: reading the new file from its start", t.path))
	case fi.Size() < t.off:
		t.restart(fmt.Sprintf("transcript %s shrank from %d to %d bytes: reading it again from its start", t.path, t.off, fi.Size()))
	}
	t.fi = fi
	if fi.Size() == t.off {
		return nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("read transcript %s: %w", t.path, err)
	}
	if t.buf == nil {
		t.buf = make([]byte, readChunk)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := f.Read(t.buf)
		t.feed(t.buf[:n])
		t.off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read transcript %s at %d: %w", t.path, t.off, err)
		}
	}
	// A last line with no newline yet is usually still being written; one
	// that is already a whole JSON object is the file's end (a writer that
	// stopped without the newline), and is taken now.
	if !t.overlong && len(t.pending) > 0 && t.pending[0] == '{' && json.Valid(t.pending) {
		t.endLine()
	}
	return nil
}

// restart forgets the file read so far, keeping its usage as the base.
func (t *Transcript) restart(notice string) {
	t.notices = append(t.notices, notice)
	t.base = t.base.Add(t.dec.usage())
	t.dec.reset()
	t.off, t.pending, t.overlong, t.long, t.head, t.tail = 0, t.pending[:0], false, 0, nil, nil
}

// feed splits appended bytes into lines.
func (t *Transcript) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.add(b)
			return
		}
		t.add(b[:i])
		t.endLine()
		b = b[i+1:]
	}
}

// add appends part of a line, switching to head-and-tail keeping when the
// line outgrows MaxTranscriptLine.
func (t *Transcript) add(b []byte) {
	if !t.overlong && len(t.pending)+len(b) <= MaxTranscriptLine {
		t.pending = append(t.pending, b...)
		return
	}
	if !t.overlong {
		t.overlong = true
		t.long = int64(len(t.pending))
		t.head = append([]byte(nil), t.pending[:min(len(t.pending), overlongHead)]...)
		t.tail = append([]byte(nil), t.pending[max(0, len(t.pending)-overlongTail):]...)
		// Let the big buffer go: one over-long line must not pin 8 MiB.
		t.pending = nil
	}
	t.long += int64(len(b))
	if len(t.head) < overlongHead {
		t.head = append(t.head, b[:min(len(b), overlongHead-len(t.head))]...)
	}
	t.tail = append(t.tail, b...)
	if len(t.tail) > 2*overlongTail {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-overlongTail:]...)
	}
}

// endLine hands a complete line to the decoder.
func (t *Transcript) endLine() {
	if t.overlong {
		if len(t.tail) > overlongTail {
			t.tail = t.tail[len(t.tail)-overlongTail:]
		}
		t.dec.overlong(t.head, t.tail)
		t.longSeen++
		t.overlong, t.long, t.head, t.tail = false, 0, nil, nil
		return
	}
	line := bytes.TrimSpace(t.pending)
	if len(line) > 0 {
		events, ok := t.dec.line(line, t.opts)
		if !ok {
			t.bad++
		}
		for _, e := range events {
			if !t.opts.EventsSince.IsZero() && !e.At.IsZero() && e.At.Before(t.opts.EventsSince) {
				continue
			}
			t.events = append(t.events, e)
		}
	}
	t.pending = t.pending[:0]
}

// parseTime reads an RFC 3339 timestamp, zero when there is none.
func parseTime(s string) time.Time {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return ts
}
