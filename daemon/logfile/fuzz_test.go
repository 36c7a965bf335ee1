//go:build linux

package logfile

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzRotateTail drives a log through writes and rotations chosen by the
// input, in collapse or punch mode, with 1 to 6 files kept, and checks the
// model: the files hold a suffix of what was written, no longer than the
// cap allows and, unless a reset made a short chunk, no shorter than the
// rotated slots hold; TailLines agrees with that suffix.
func FuzzRotateTail(f *testing.F) {
	f.Add([]byte{2, 0, 200, 30, 255, 255, 7, 1, 0, 9})
	f.Add([]byte{1, 1, 10, 10, 10, 10, 10})
	f.Add([]byte{6, 0, 255, 255, 255, 255, 255, 255, 255, 255, 3, 3})
	f.Add([]byte{3, 1, 0, 0, 100, '\n', 17, 80})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 2 {
			return
		}
		keep := int(ops[0]%6) + 1
		dir := collapseDir
		if ops[1]%2 == 1 {
			dir = tmpfsDir
		}
		const maxSize = 4096
		l := newLog(t, dir(t), Options{MaxSize: maxSize, Keep: keep, ResetSize: 64 << 10})
		w, err := OpenAppend(l.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var written []byte
		for i, op := range ops[2:] {
			// A write of up to ~20 KiB of lines whose length the byte
			// picks; a rotation after every other write.
			lineLen := int(op%64) + 1
			n := int(op) * 80
			var b bytes.Buffer
			for b.Len() < n {
				b.Write(bytes.Repeat([]byte{byte('a' + i%26)}, lineLen-1))
				b.WriteByte('\n')
			}
			if _, err := w.Write(b.Bytes()); err != nil {
				t.Fatal(err)
			}
			written = append(written, b.Bytes()...)
			if i%2 == 1 {
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Rotate(); err != nil {
			t.Fatal(err)
		}
		kept := readAll(t, l)
		if !bytes.HasSuffix(written, kept) {
			t.Fatalf("kept %d bytes that are not the end of the %d written (%+v)", len(kept), len(written), l.Stats())
		}
		if int64(len(kept)) > l.Limit() {
			t.Fatalf("kept %d bytes, over the cap %d (%+v)", len(kept), l.Limit(), l.Stats())
		}
		// A reset's last chunk is short, so only a log never reset keeps
		// every slot full.
		if min := min(int64(len(written)), int64(keep-1)*maxSize); int64(len(kept)) < min && l.Stats().Resets == 0 {
			t.Fatalf("kept %d bytes, want at least %d (%+v)", len(kept), min, l.Stats())
		}
		for _, n := range []int{1, 3, 50} {
			got, err := l.TailLines(n, 6000)
			if err != nil {
				t.Fatal(err)
			}
			if want := refTail(kept, n, 6000); !slices.Equal(got, want) {
				t.Fatalf("TailLines(%d): %d lines, want %d (%+v)", n, len(got), len(want), l.Stats())
			}
		}
	})
}
