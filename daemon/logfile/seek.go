package logfile

import "errors"

// NewReaderAt returns a Reader at stream offset off (an offset Stamps
// gave): at the oldest byte kept when off is older than that, at the end
// when off is past it.
func (l *Log) NewReaderAt(off int64) (*Reader, error) {
	r, err := l.NewReader(-1)
	if err != nil {
		return nil, err
	}
	end, err := r.end()
	if err != nil {
		r.Close()
		return nil, err
	}
	r.pos = min(max(off, r.pos), end)
	return r, nil
}

// LineStart reports whether the Reader is at the start of a line: the byte
// before it is a newline, or it is at the oldest byte kept (whatever came
// before that is gone).
func (r *Reader) LineStart() (bool, error) {
	if r.pos <= r.l.oldest() {
		return true, nil
	}
	var b [1]byte
	err := r.readFull(b[:], r.pos-1)
	if errors.As(err, new(gone)) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}
