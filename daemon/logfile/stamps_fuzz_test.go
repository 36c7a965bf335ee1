package logfile

import (
	"testing"
	"time"
)

// FuzzDecodeStamps feeds arbitrary stamp files to the decoder and the
// lookups: no panic, and what is returned keeps the format's rules.
func FuzzDecodeStamps(f *testing.F) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	good := []byte(stampMagic)
	good = stamp{end: 0, at: stampOldest}.append(good)
	good = stamp{end: 10, at: stampUnknown}.append(good)
	good = stamp{end: 20, at: at}.append(good)
	good = stamp{end: 5, at: stampOldest}.append(good)
	good = stamp{end: 40, at: at + 1e9}.append(good)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(stampMagic))
	f.Add([]byte("SDSTAMP"))
	f.Add(append([]byte(stampMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, oldest, _ := decodeStamps(data)
		if oldest < 0 {
			t.Fatalf("oldest %d", oldest)
		}
		var last int64
		for _, r := range recs {
			if r.end < last || r.at < 0 {
				t.Fatalf("record %+v after offset %d", r, last)
			}
			last = r.end
		}
		s := &Stamps{recs: recs, oldest: oldest}
		for _, off := range []int64{-1, 0, 7, last, last + 1} {
			_ = s.TimeOf(off)
		}
		for _, ns := range []int64{0, at, at + 2e9} {
			if o := s.OffsetAt(time.Unix(0, ns)); o < 0 || o > max(last, oldest) {
				t.Fatalf("OffsetAt = %d outside [0, %d]", o, max(last, oldest))
			}
		}
		_ = s.UnknownUntil()
		_ = mergeStamps(recs, len(recs)/2+1)
	})
}
