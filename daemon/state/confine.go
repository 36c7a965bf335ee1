package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrOutsideProject is matched by errors.Is when a project path is
// absolute, climbs out with "..", or reaches a symlink that leaves the
// project: such a path is refused, never followed.
var ErrOutsideProject = errors.New("path leaves the project")

// CheckRelativePath checks the value of a config key that names a file of
// the project (progress_file, feature_list, ...) without touching the
// disk: it must be a relative path that stays inside the project after
// "." and ".." are resolved lexically. The error names the key. Symlinks
// are checked later, when the file is opened inside the project.
func CheckRelativePath(key, value string) error {
	switch {
	case value == "":
		return nil
	case strings.IndexByte(value, 0) >= 0:
		return fmt.Errorf("%s: contains a NUL byte", key)
	case filepath.IsAbs(value):
		return fmt.Errorf("%s = %q: must be a path relative to the project, not an absolute one: %w", key, value, ErrOutsideProject)
	case !filepath.IsLocal(value):
		return fmt.Errorf("%s = %q: must stay inside the project (\"..\" leaves it): %w", key, value, ErrOutsideProject)
	}
	return nil
}

// refused is the error for a project path that leaves the project.
func refused(rel, project string) error {
	return fmt.Errorf("refused: %s leaves the project %s: %w", rel, project, ErrOutsideProject)
}
