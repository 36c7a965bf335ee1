package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestTermFrameRoundTrip(t *testing.T) {
	frames := []TermFrame{
		{TermFrameHello, []byte(`{"op":"attach"}`)},
		{TermFrameData, []byte("hello\r\n\x1b[31mred\x1b[0m")},
		{TermFrameData, nil},
		{TermFrameResize, EncodeTermSize(TermSize{Cols: 80, Rows: 24})},
		{TermFrameDetach, nil},
		{TermFrameExited, []byte(`{"pid":1,"exit_code":0,"exited_at":"2025-01-01T00:00:00Z"}`)},
		{TermFrameData, bytes.Repeat([]byte("x"), MaxTermPayload)},
	}
	var stream bytes.Buffer
	for _, f := range frames {
		if err := WriteTermFrame(&stream, f.Type, f.Payload); err != nil {
			t.Fatal(err)
		}
	}
	fr := NewTermFrameReader(&stream)
	for i, want := range frames {
		got, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Type != want.Type || !bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("frame %d: got %s of %d bytes, want %s of %d bytes", i, got.Type, len(got.Payload), want.Type, len(want.Payload))
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after the last frame: got %v, want io.EOF", err)
	}
}

func TestTermFrameBad(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"unknown type", "Z\x00\x00\x00\x00", ErrTermFrame},
		{"too long", "d\x00\x10\x00\x01", ErrTermFrame},
		{"cut header", "d\x00\x00", io.ErrUnexpectedEOF},
		{"cut payload", "d\x00\x00\x00\x05abc", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTermFrameReader(strings.NewReader(tc.in)).Next()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			_, err = ReadTermFrame(strings.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadTermFrame: got %v, want %v", err, tc.want)
			}
		})
	}
	if err := WriteTermFrame(io.Discard, TermFrameData, make([]byte, MaxTermPayload+1)); !errors.Is(err, ErrTermFrame) {
		t.Fatalf("oversized write: got %v, want ErrTermFrame", err)
	}
}

func TestReadTermFrameReadsNoFurther(t *testing.T) {
	var stream bytes.Buffer
	_ = WriteTermFrame(&stream, TermFrameOK, []byte("{}"))
	_ = WriteTermFrame(&stream, TermFrameData, []byte("rest"))
	if _, err := ReadTermFrame(&stream); err != nil {
		t.Fatal(err)
	}
	if got := stream.Len(); got != TermHeaderSize+4 {
		t.Fatalf("ReadTermFrame left %d bytes, want %d", got, TermHeaderSize+4)
	}
}

func TestCheckTermSize(t *testing.T) {
	for _, tc := range []struct {
		cols, rows int
		want       TermSize
		err        bool
	}{
		{80, 24, TermSize{80, 24}, false},
		{1, 1, TermSize{1, 1}, false},
		{0, 24, TermSize{}, true},
		{80, 0, TermSize{}, true},
		{-1, 5, TermSize{}, true},
		{65535, 65535, TermSize{MaxTermCols, MaxTermRows}, false},
		{600, 10, TermSize{MaxTermCols, 10}, false},
	} {
		got, err := CheckTermSize(tc.cols, tc.rows)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("CheckTermSize(%d, %d) = %v, %v; want %v, error %v", tc.cols, tc.rows, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrTermSize) {
			t.Errorf("CheckTermSize(%d, %d): %v does not match ErrTermSize", tc.cols, tc.rows, err)
		}
	}
}

func TestTermSizeEncoding(t *testing.T) {
	for _, s := range []TermSize{{80, 24}, {0, 0}, {65535, 65535}, {1, 300}} {
		got, err := DecodeTermSize(EncodeTermSize(s))
		if err != nil || got != s {
			t.Errorf("round trip of %v: got %v, %v", s, got, err)
		}
	}
	if got, _ := DecodeTermSize(EncodeTermSize(TermSize{70000, -3})); got != (TermSize{65535, 0}) {
		t.Errorf("out-of-range size encoded as %v, want 65535x0", got)
	}
	if _, err := DecodeTermSize([]byte{1, 2, 3}); !errors.Is(err, ErrTermFrame) {
		t.Errorf("3-byte resize: got %v, want ErrTermFrame", err)
	}
}

func TestTermRequestCheck(t *testing.T) {
	for _, tc := range []struct {
		req  TermRequest
		want string // "" for valid
	}{
		{TermRequest{Op: TermOpAttach}, ""},
		{TermRequest{Op: TermOpAttach, ReadOnly: true}, ""},
		{TermRequest{Op: TermOpSend, Text: "ls"}, ""},
		{TermRequest{Op: TermOpSend, Enter: true}, ""},
		{TermRequest{Op: TermOpSend}, "nothing to send"},
		{TermRequest{Op: TermOpSend, Text: "\xff"}, "UTF-8"},
		{TermRequest{Op: TermOpSend, Text: strings.Repeat("a", MaxTermSendText+1)}, "over the limit"},
		{TermRequest{Op: TermOpScreen, Scrollback: 10}, ""},
		{TermRequest{Op: TermOpScreen, Scrollback: -1}, "scrollback"},
		{TermRequest{Op: TermOpResize, Size: TermSize{100, 40}}, ""},
		{TermRequest{Op: TermOpResize, Size: TermSize{0, 40}}, "at least 1"},
		{TermRequest{Op: TermOpStatus}, ""},
		{TermRequest{Op: TermOpWait}, ""},
		{TermRequest{}, "op is missing"},
		{TermRequest{Op: "dance"}, `unknown op "dance"`},
	} {
		err := tc.req.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc.req, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want an error containing %q", tc.req, err, tc.want)
		}
	}
}

func TestDecodeTermJSON(t *testing.T) {
	var r TermRequest
	if err := DecodeTermJSON(TermFrame{TermFrameHello, []byte(`{"op":"send","text":"hi","enter":true}`)}, &r); err != nil {
		t.Fatal(err)
	}
	if r.Op != TermOpSend || r.Text != "hi" || !r.Enter {
		t.Fatalf("decoded %+v", r)
	}
	for _, bad := range []string{``, `{"op":"send","colour":1}`, `{"op":"send"} {}`, `[1]`, `{"op":`} {
		if err := DecodeTermJSON(TermFrame{TermFrameHello, []byte(bad)}, &r); !errors.Is(err, ErrTermFrame) {
			t.Errorf("%q: got %v, want ErrTermFrame", bad, err)
		}
	}
}

func TestTermScreenText(t *testing.T) {
	s := TermScreen{Lines: []string{"$ ls", "a  b", "", "", ""}}
	if got, want := s.Text(), "$ ls\na  b\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := (TermScreen{Lines: []string{"", ""}}).Text(); got != "" {
		t.Fatalf("empty screen: got %q", got)
	}
}

func TestTermExitString(t *testing.T) {
	if got := (TermExit{Code: 3}).String(); got != "exit code 3" {
		t.Errorf("got %q", got)
	}
	if got := (TermExit{Code: -1, Signal: "SIGTERM"}).String(); got != "killed by SIGTERM" {
		t.Errorf("got %q", got)
	}
}

// FuzzTermFrame feeds arbitrary bytes to the frame reader: it must never
// panic, and every frame it returns must encode back to the bytes it came
// from.
func FuzzTermFrame(f *testing.F) {
	var seed bytes.Buffer
	_ = WriteTermFrame(&seed, TermFrameHello, []byte(`{"op":"attach"}`))
	_ = WriteTermFrame(&seed, TermFrameResize, EncodeTermSize(TermSize{80, 24}))
	_ = WriteTermFrame(&seed, TermFrameData, []byte("ls\r"))
	f.Add(seed.Bytes())
	f.Add([]byte("d\x00\x00\x00\x01x"))
	f.Add([]byte("q\x00\x00\x00\x00"))
	f.Add([]byte("d\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewTermFrameReader(bytes.NewReader(data))
		off := 0
		for {
			fm, err := fr.Next()
			if err != nil {
				return
			}
			enc := AppendTermFrame(nil, fm.Type, fm.Payload)
			if !bytes.Equal(enc, data[off:off+len(enc)]) {
				t.Fatalf("frame at %d re-encodes differently", off)
			}
			off += len(enc)
			switch fm.Type {
			case TermFrameResize:
				if s, err := DecodeTermSize(fm.Payload); err == nil {
					if got, _ := DecodeTermSize(EncodeTermSize(s)); got != s {
						t.Fatalf("size %v does not round-trip", s)
					}
					_, _ = CheckTermSize(s.Cols, s.Rows)
				}
			case TermFrameHello:
				var r TermRequest
				if DecodeTermJSON(fm, &r) == nil {
					_ = r.Check()
				}
			case TermFrameExited:
				var e TermExit
				_ = DecodeTermJSON(fm, &e)
			case TermFrameError:
				var e TermError
				_ = DecodeTermJSON(fm, &e)
			}
		}
	})
}

// FuzzTermRequest decodes arbitrary hello payloads: no panic, and a request
// that passes Check survives a JSON round trip unchanged.
func FuzzTermRequest(f *testing.F) {
	f.Add([]byte(`{"op":"attach","read_only":true}`))
	f.Add([]byte(`{"op":"send","text":"echo hi","enter":true}`))
	f.Add([]byte(`{"op":"resize","size":{"cols":65535,"rows":0}}`))
	f.Add([]byte(`{"op":"screen","scrollback":-5}`))
	f.Add([]byte(`{"op":"wait"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var r TermRequest
		if err := DecodeTermJSON(TermFrame{TermFrameHello, payload}, &r); err != nil {
			return
		}
		if r.Check() != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back TermRequest
		if err := DecodeTermJSON(TermFrame{TermFrameHello, b}, &back); err != nil || back != r {
			t.Fatalf("round trip of %+v: got %+v, %v", r, back, err)
		}
	})
}

func TestTermExitJSON(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	b, _ := json.Marshal(TermExit{PID: 42, Code: -1, Signal: "SIGKILL", ExitedAt: at})
	if got, want := string(b), `{"pid":42,"exit_code":-1,"signal":"SIGKILL","exited_at":"2025-03-04T05:06:07Z"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
