package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// timedLogs reports whether a log request needs the log's stamps.
func timedLogs(opt ipc.LogOptions) bool {
	return opt.Timestamps || !opt.Since.IsZero() || !opt.Until.IsZero()
}

// stampedLogs is SessionLogs by the times the log's lines were seen (its
// stamp file): each line prefixed with its time (opt.Timestamps), only the
// lines seen from opt.Since to opt.Until. A line's time is that of the
// write burst its first byte came in. Lines of unknown time (a log begun
// before its times were kept) have no prefix and are never in a range.
func (l *Service) stampedLogs(ctx context.Context, s *session.Session, f *logfile.Log, opt ipc.LogOptions, w io.Writer) error {
	st, err := f.Stamps(nil)
	if err != nil {
		l.log.Warn("log times unreadable; the log is shown without them", zap.String("session", s.ID()), zap.Error(err))
		st = nil
	}
	ranged := !opt.Since.IsZero() || !opt.Until.IsZero()
	if st == nil && ranged {
		return ipc.Conflict("the log of session %s has no timestamps (it was written before sessiond kept them): --since and --until cannot select its lines; show it without them", s.ID())
	}
	from := -1
	if opt.Tail > 0 {
		from = opt.Tail
	}
	r, err := f.NewReader(from)
	if err != nil {
		return err
	}
	// Lines of unknown time that --since skips count as left out.
	coverage := ipc.LogStampsAll
	switch {
	case st == nil:
		coverage = ipc.LogStampsNone
	case st.UnknownUntil() > r.Offset():
		coverage = ipc.LogStampsPartial
	}
	if !opt.Since.IsZero() {
		if off := st.OffsetAt(opt.Since); off > r.Offset() {
			r.Close()
			if r, err = f.NewReaderAt(off); err != nil {
				return err
			}
		}
	}
	defer r.Close()
	lineStart, err := r.LineStart()
	if err != nil {
		return err
	}
	if rep, ok := w.(ipc.StampsReporter); ok {
		rep.ReportStamps(coverage)
	}
	ls := &lineStamper{log: f, stamps: st, w: w, timestamps: opt.Timestamps, since: opt.Since, until: opt.Until,
		pos: r.Offset(), lineStart: lineStart}
	var untilC <-chan time.Time
	if opt.Follow && !opt.Until.IsZero() {
		t := time.NewTimer(time.Until(opt.Until))
		defer t.Stop()
		untilC = t.C
	}
	buf := make([]byte, 32*1024)
	return l.watcher.follow(ctx, s, opt.Follow, untilC, func() (bool, error) {
		err := ls.drain(r, buf)
		return ls.done, err
	})
}

// lineStamper writes a log's bytes line by line with their times.
type lineStamper struct {
	log          *logfile.Log
	stamps       *logfile.Stamps
	w            io.Writer
	timestamps   bool
	since, until time.Time

	pos       int64 // stream offset of the next byte
	lineStart bool  // the next byte begins a line
	keep      bool  // the current line is sent
	done      bool  // a line seen after until came: nothing more is sent
	refreshed bool  // the stamps were read again since the last read
	out       []byte
}

// drain sends what the reader has until io.EOF.
func (ls *lineStamper) drain(r *logfile.Reader, buf []byte) error {
	for !ls.done {
		n, err := r.Read(buf)
		if n > 0 {
			if start := r.Offset() - int64(n); start != ls.pos {
				// Bytes left the disk before they were read (go on at the
				// oldest kept), or a reset lost bytes after they were read
				// (go on at what came after it): either way, as a line of
				// its own.
				ls.pos, ls.lineStart = start, true
			}
			ls.refreshed = false
			if werr := ls.write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (ls *lineStamper) write(p []byte) error {
	ls.out = ls.out[:0]
	for len(p) > 0 {
		if ls.lineStart {
			t := ls.timeOf(ls.pos)
			if !ls.until.IsZero() && !t.IsZero() && t.After(ls.until) {
				ls.done = true
				break
			}
			ls.keep = ls.inRange(t)
			if ls.keep && ls.timestamps && !t.IsZero() {
				ls.out = t.UTC().AppendFormat(ls.out, ipc.TimestampFormat)
				ls.out = append(ls.out, ' ')
			}
			ls.lineStart = false
		}
		seg := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			seg = p[:i+1]
			ls.lineStart = true
		}
		if ls.keep {
			ls.out = append(ls.out, seg...)
		}
		ls.pos += int64(len(seg))
		p = p[len(seg):]
	}
	if len(ls.out) == 0 {
		return nil
	}
	_, err := ls.w.Write(ls.out)
	return err
}

// inRange reports whether a line seen at t is sent.
func (ls *lineStamper) inRange(t time.Time) bool {
	if ls.since.IsZero() && ls.until.IsZero() {
		return true
	}
	if t.IsZero() {
		return false
	}
	return !t.Before(ls.since) && (ls.until.IsZero() || !t.After(ls.until))
}

// timeOf returns when the byte at off was seen: from the stamps, read
// again once per read when they do not reach it yet, else now. Bytes the
// watcher has not stamped yet (its write event is still on its way) are
// seen now, by this reader, and stamped so, so that every reader agrees.
func (ls *lineStamper) timeOf(off int64) time.Time {
	if ls.stamps == nil {
		return time.Time{}
	}
	if off >= ls.stamps.End() && !ls.refreshed {
		ls.refreshed = true
		ls.log.Seen(time.Now())
		if st, err := ls.log.Stamps(ls.stamps); err == nil && st != nil {
			ls.stamps = st
		}
	}
	if off >= ls.stamps.End() {
		return time.Now()
	}
	return ls.stamps.TimeOf(off)
}
