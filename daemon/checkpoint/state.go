package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// incState is what an incremental checkpoint builds on: the last checkpoint
// of one session in one work tree, and the inputs it was made from. It is
// kept in memory only: after a restart the first checkpoint of a session is
// a full scan.
type incState struct {
	tipID    string  // the checkpoint (the ref's tip after it)
	depth    int     // checkpoints on the ref then
	oldest   int64   // unix time of the ref's oldest checkpoint then
	tree     string  // the checkpoint's tree
	index    fileSig // the user's index it was made with
	indexSum string  // and that index's trailing checksum
	rules    string  // digest of the ignore and size rules it was made under
	fullAt   time.Time
	since    int // incremental checkpoints since the last full scan
	// always are paths given to every incremental checkpoint whatever
	// changed: nested repositories (their HEAD moves without a change the
	// watcher sees) and tracked files in directories the watcher does not
	// watch (ignored or left out).
	always  []string
	leftOut []string // what the last checkpoint left out
	// noIncremental says why this work tree is always scanned in full; ""
	// when it need not be.
	noIncremental string
	// trees are the trees the last incremental checkpoint read or made (on
	// the way to what changed), by raw id: the next one likely needs them.
	trees map[string][]treeEntry
}

// prev is the ref's tip as the state knows it.
func (st *incState) prev() prevCheckpoint {
	return prevCheckpoint{id: st.tipID, tree: st.tree, depth: st.depth, oldest: st.oldest}
}

// maxStates bounds the states kept; the oldest go first.
const maxStates = 1024

// stateStore holds the incremental states of a Checkpointer.
type stateStore struct {
	mu sync.Mutex
	m  map[string]*incState
}

func stateKey(r *repo, sessionID string) string { return r.gitDir + "\x00" + sessionID }

func (s *stateStore) get(key string) *incState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *stateStore) put(key string, st *incState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*incState{}
	}
	if _, ok := s.m[key]; !ok && len(s.m) >= maxStates {
		var oldest string
		var at time.Time
		for k, v := range s.m {
			if oldest == "" || v.fullAt.Before(at) {
				oldest, at = k, v.fullAt
			}
		}
		delete(s.m, oldest)
	}
	s.m[key] = st
}

// retip records that a prune rewrote the ref the state's checkpoint is
// the tip of.
func (s *stateStore) retip(key, old, id string, depth int, oldest int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[key]; ok && st.tipID == old {
		next := *st
		next.tipID, next.depth, next.oldest = id, depth, oldest
		s.m[key] = &next
	}
}

func (s *stateStore) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// rulesDigest sums up what decides, besides the work tree and the index,
// which files a checkpoint holds: the repository's info/exclude, the extra
// ignore patterns, the size limit and the left-out directory names. If any
// changed since the state was made, the next checkpoint is a full one.
func (r *repo) rulesDigest(ignore []string, maxFile int64, leaveOut []string) string {
	h := sha256.New()
	ex := statSig(filepath.Join(r.commonDir, "info", "exclude"))
	fmt.Fprintf(h, "exclude %+v\nmax %d\nleave-out %q\nignore %q\n", ex, maxFile, leaveOut, strings.Join(ignore, "\n"))
	return hex.EncodeToString(h.Sum(nil))
}
