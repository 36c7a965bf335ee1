package tokens

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := Open(dir)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	tok, meta, err := s.Create("phone", me.Username, ScopeRead, 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "sdt_"+meta.ID+"_") || meta.Expires != now.Add(30*24*time.Hour) {
		t.Fatalf("token %q, %+v", tok, meta)
	}
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	// The secret is URL-safe base64: it may hold "_" itself.
	secret := strings.TrimPrefix(tok, "sdt_"+meta.ID+"_")
	if strings.Contains(string(data), secret) {
		t.Fatal("the token's secret is in the file")
	}
	if fi, _ := os.Stat(filepath.Join(dir, File)); fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode %v", fi.Mode())
	}
	c, scope, err := s.Check(tok, now.Add(time.Hour))
	if err != nil || scope != ScopeRead || c.UID != os.Getuid() {
		t.Fatalf("check: %+v %q %v", c, scope, err)
	}
	for _, bad := range []string{"", "sdt_", tok + "x", "sdt_" + meta.ID + "_" + strings.Repeat("A", len(secret)), strings.Replace(tok, meta.ID, "00000000", 1)} {
		if _, _, err := s.Check(bad, now); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
	if _, _, err := s.Check(tok, now.Add(31*24*time.Hour)); err == nil {
		t.Error("an expired token accepted")
	}
	if _, err := s.Revoke(meta.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Check(tok, now.Add(2*time.Hour)); err == nil {
		t.Error("a revoked token accepted")
	}
	if _, err := s.Revoke(meta.ID); err == nil {
		t.Error("revoking twice: no error")
	}
	if _, _, err := s.Create("", me.Username, "admin", 0, now); err == nil {
		t.Error("a scope that is none accepted")
	}
	if _, _, err := s.Create("", "no-such-user-sessiond", ScopeRead, 0, now); err == nil {
		t.Error("a token for no user")
	}
}
