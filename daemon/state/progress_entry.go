package state

import (
	"bytes"
	"errors"
	"io/fs"
)

// HasProgressEntry reports whether the progress log at path already holds
// the entry of session sessionID (the "Session ID, ended: ..." line that
// AppendProgress writes), so that an end written twice — by a daemon that
// died in the middle of it, then by the next one — appends one entry.
func HasProgressEntry(path, sessionID string) (bool, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	marker := []byte("Session " + sessionID)
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, marker); ok && (len(rest) == 0 || rest[0] == ',') {
			return true, nil
		}
	}
	return false, nil
}
