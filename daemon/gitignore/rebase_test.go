package gitignore

import (
	"slices"
	"testing"
)

func TestRebase(t *testing.T) {
	pats := []string{"*.log", "/build/", "a/b", "!/keep", "**/tmp", "vendor/lib/out/", "dir/", "# c", ""}
	for _, tc := range []struct {
		up, down string
		want     []string
	}{
		{"", "", []string{"*.log", "/build/", "a/b", "!/keep", "**/tmp", "vendor/lib/out/", "dir/"}},
		{"proj", "", []string{"*.log", "/proj/build/", "/proj/a/b", "!/proj/keep", "/proj/**/tmp", "/proj/vendor/lib/out/", "dir/"}},
		{"", "vendor/lib", []string{"*.log", "**/tmp", "/out/", "dir/"}},
	} {
		if got := Rebase(pats, tc.up, tc.down); !slices.Equal(got, tc.want) {
			t.Errorf("Rebase(up %q, down %q) = %q, want %q", tc.up, tc.down, got, tc.want)
		}
	}
}
