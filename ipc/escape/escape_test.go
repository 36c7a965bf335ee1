package escape

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func escapeWith(s string, keepLines bool) string {
	if keepLines {
		return Terminal(s)
	}
	return Line(s)
}

func FuzzTerminalText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\nb\tc\r", "\u009b\u202e", "\xff\xfe", "日本\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, keep := range []bool{true, false} {
			out := escapeWith(s, keep)
			if !utf8.ValidString(out) {
				t.Fatalf("%q: output %q is not UTF-8", s, out)
			}
			for _, r := range out {
				if r < 0x20 && !(keep && (r == '\n' || r == '\t')) || r == 0x7f || escapedRune(r) {
					t.Fatalf("%q: output %q still holds %U", s, out, r)
				}
			}
			if again := escapeWith(out, keep); again != out {
				t.Fatalf("%q: not stable: %q then %q", s, out, again)
			}
		}
	})
}

// TestWriterSplits: what the Writer writes does not depend on how the
// text was cut into writes.
func TestWriterSplits(t *testing.T) {
	in := "a\x1b[31mred\x1b]0;title\x07 日本\u202e!\xff\n\tend"
	want := Terminal(in)
	for cut := 0; cut <= len(in); cut++ {
		var b strings.Builder
		w := NewWriter(&b)
		_, _ = w.Write([]byte(in[:cut]))
		_, _ = w.Write([]byte(in[cut:]))
		_ = w.Flush()
		if b.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
}

func TestJSONC1(t *testing.T) {
	in := []byte("{\"f\":\"a\u009d52;c;SGk=\u009c\u009b6n é \u00a0\"}")
	out := JSONC1(in)
	if want := `{"f":"a\u009d52;c;SGk=\u009c\u009b6n é ` + "\u00a0" + `"}`; string(out) != want {
		t.Errorf("JSONC1 = %q, want %q", out, want)
	}
	var a, b map[string]string
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil || a["f"] != b["f"] {
		t.Errorf("the escaped JSON reads back as %q, want %q", b["f"], a["f"])
	}
	plain := []byte(`{"f":"é à"}`)
	if got := JSONC1(plain); &got[0] != &plain[0] {
		t.Error("JSONC1 copied JSON that holds no C1 control")
	}
}
