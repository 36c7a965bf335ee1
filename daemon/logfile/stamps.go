package logfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
)

// The stamp file (output.log.stamps) says when the log's bytes were first
// seen, so that they can be shown with times and selected by time. It is
// the magic, then records of 16 bytes: a stream offset and a time, both
// little-endian int64. A record with a time (Unix nanoseconds, > 0) says
// that the bytes after the previous record's offset up to its own were
// seen at that time (one write burst); one with stampUnknown says that
// those bytes were written before anyone kept their times; one with
// stampOldest says that the bytes before its offset have left the disk. A
// truncated last record is ignored; the first record that breaks these
// rules ends the file.
const (
	stampMagic = "SDSTAMP1"
	stampSize  = 16

	stampUnknown int64 = 0
	stampOldest  int64 = -1
)

// stamp is one record of the stamp file.
type stamp struct {
	end int64 // stream offset just past the bytes it times, or the oldest kept
	at  int64 // Unix nanoseconds, stampUnknown or stampOldest
}

func (s stamp) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(s.end))
	return binary.LittleEndian.AppendUint64(b, uint64(s.at))
}

// errStampFile is a stamp file that is not one.
var errStampFile = errors.New("not a stamp file")

// decodeStamps reads a stamp file's content: the bursts (and unknown runs)
// in order, and the highest oldest-kept offset. A record that breaks the
// format ends the valid part: what came before it is returned, with an
// error that says where it stopped.
func decodeStamps(data []byte) (recs []stamp, oldest int64, err error) {
	if len(data) < len(stampMagic) || string(data[:len(stampMagic)]) != stampMagic {
		return nil, 0, errStampFile
	}
	return decodeRecords(data[len(stampMagic):], 0, nil, 0)
}

// decodeRecords appends the records of body (from record number first on)
// to recs, whose last offset is last.
func decodeRecords(body []byte, first int, recs []stamp, last int64) ([]stamp, int64, error) {
	var oldest int64
	if n := len(recs); n > 0 {
		last = recs[n-1].end
	}
	for i := 0; i+stampSize <= len(body); i += stampSize {
		s := stamp{
			end: int64(binary.LittleEndian.Uint64(body[i:])),
			at:  int64(binary.LittleEndian.Uint64(body[i+8:])),
		}
		var err error
		switch {
		case s.end < 0:
			err = fmt.Errorf("negative offset %d", s.end)
		case s.at == stampOldest:
			oldest = max(oldest, s.end)
			continue
		case s.at < stampOldest:
			err = fmt.Errorf("bad time %d", s.at)
		case s.end < last:
			err = fmt.Errorf("offset %d goes back from %d", s.end, last)
		}
		if err != nil {
			return recs, oldest, fmt.Errorf("stamp record %d: %w", first+i/stampSize, err)
		}
		last = s.end
		recs = append(recs, s)
	}
	return recs, oldest, nil
}

// Stamps are the times a log's bytes were first seen, as its stamp file
// held them when it was read: what `sessionctl logs --timestamps` prints
// and --since and --until select by. Offsets are stream offsets of the Log
// that returned them (those of its Readers). A nil *Stamps is a log without
// a stamp file (written before sessiond kept times): every time is unknown.
type Stamps struct {
	recs   []stamp
	oldest int64
	// n is the number of records read from the file (of generation gen),
	// and lastBurst whether the last of them is the last of recs: a
	// refresh reads from there on.
	n         int
	gen       uint64
	lastBurst bool
}

// End returns the stream offset up to which bytes have been stamped; the
// times of later bytes are not known yet (they were written since).
func (s *Stamps) End() int64 {
	if s == nil || len(s.recs) == 0 {
		return 0
	}
	return s.recs[len(s.recs)-1].end
}

// TimeOf returns when the byte at stream offset off was seen: zero when
// that is unknown (written before its log kept times, or after End).
func (s *Stamps) TimeOf(off int64) time.Time {
	if s == nil {
		return time.Time{}
	}
	i := sort.Search(len(s.recs), func(i int) bool { return s.recs[i].end > off })
	if i == len(s.recs) || s.recs[i].at <= 0 {
		return time.Time{}
	}
	return time.Unix(0, s.recs[i].at)
}

// UnknownUntil returns the stream offset before which the times of the
// bytes still kept are unknown (0 when every stamped byte has its time).
func (s *Stamps) UnknownUntil() int64 {
	if s == nil {
		return 0
	}
	var until int64
	for _, r := range s.recs {
		if r.at == stampUnknown && r.end > s.oldest {
			until = r.end
		}
	}
	return until
}

// OffsetAt returns the stream offset of the first byte seen at t or later
// (End when none is yet). Times are taken to grow with offsets; a clock
// set back makes the answer approximate.
func (s *Stamps) OffsetAt(t time.Time) int64 {
	if s == nil {
		return 0
	}
	ns := t.UnixNano()
	i := sort.Search(len(s.recs), func(i int) bool { return s.recs[i].at > 0 && s.recs[i].at >= ns })
	if i == 0 {
		return s.oldest
	}
	if i == len(s.recs) {
		return s.End()
	}
	return max(s.recs[i-1].end, s.oldest)
}
