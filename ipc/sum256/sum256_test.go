package sum256

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestKnownDigests(t *testing.T) {
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq": "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	} {
		got := Sum([]byte(in))
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("Sum(%q) = %x, want %s", in, got, want)
		}
	}
}

// TestAsCryptoSHA256: every length across the padding's edges (55, 56,
// 63, 64 bytes and on), as crypto/sha256 gives.
func TestAsCryptoSHA256(t *testing.T) {
	for n := range 300 {
		in := []byte(strings.Repeat("/home/ann/work/", 20)[:n])
		if got, want := Sum(in), sha256.Sum256(in); got != want {
			t.Errorf("length %d: %x, want %x", n, got, want)
		}
	}
}

func FuzzAsCryptoSHA256(f *testing.F) {
	f.Add([]byte("/srv/project"))
	f.Add(make([]byte, 119))
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := Sum(in), sha256.Sum256(in); got != want {
			t.Fatalf("%q: %x, want %x", in, got, want)
		}
	})
}
