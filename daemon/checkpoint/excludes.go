package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessiond/sessiond/daemon/gitignore"
)

// pinExcludes makes the extra ignore patterns the only excludes file of the
// call's ref-mode git commands (none: no excludes file).
func (r *repo) pinExcludes(tmp string, patterns []string) error {
	file := os.DevNull
	if pats := anchorPatterns(patterns, r.project, r.top); len(pats) > 0 {
		file = filepath.Join(tmp, "exclude")
		if err := writePrivateFile(r.cred, file, []byte(strings.Join(pats, "\n")+"\n"), time.Time{}); err != nil {
			return fmt.Errorf("write ignore patterns: %w", err)
		}
	}
	r.config = append(slices.Clip(r.config), [2]string{"core.excludesFile", file})
	return nil
}

// anchorPatterns moves anchored patterns, written relative to the project,
// to the top of the work tree when the project is a subdirectory of it.
func anchorPatterns(patterns []string, project, top string) []string {
	up, _ := filepath.Rel(top, project)
	if up = filepath.ToSlash(up); up == "." {
		up = ""
	}
	return gitignore.Rebase(patterns, up, "")
}
