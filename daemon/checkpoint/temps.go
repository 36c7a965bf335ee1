package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// tempNames names the temporary directories of a checkpointer's calls (the
// indexes of a checkpoint, a restore, the stats), and removes those an
// earlier checkpointer of the same state dir left: a daemon killed in the
// middle of a call leaves its directory, a copy of the user's index, which
// nothing else would ever remove. Every daemon of a state dir names its
// directories family+instance+"-"+kind; one daemon runs on a state dir at
// a time (its lock), so a directory of the family that is not this
// checkpointer's instance is a dead daemon's.
type tempNames struct {
	family string // "sessiond-<state dir's hash>-ckpt-"
	own    string // family + this checkpointer's instance + "-"

	mu    sync.Mutex
	swept map[string]bool // the places (dir, uid) swept already
}

func newTempNames(stateDir string) *tempNames {
	sum := sha256.Sum256([]byte(stateDir))
	family := "sessiond-" + hex.EncodeToString(sum[:6]) + "-ckpt-"
	var inst [4]byte
	_, _ = rand.Read(inst[:])
	return &tempNames{family: family, own: family + hex.EncodeToString(inst[:]) + "-", swept: map[string]bool{}}
}

// mkdirTemp makes a private temporary directory for one call of kind,
// where tempBase(r) says, as the credential's user; the first in each
// place for each user first removes what an earlier daemon of the state
// dir left there.
func (r *repo) mkdirTemp(kind string) (string, error) {
	base := tempBase(r)
	if r.temps == nil {
		return mkdirTemp(r.cred, base, "sessiond-"+kind+"-*")
	}
	r.temps.sweep(r.cred, base)
	return mkdirTemp(r.cred, base, r.temps.own+kind+"-*")
}

// sweep removes, once for each place and user, the directories of the
// family in base (the system's temporary directory for "") that are the
// user's and not this checkpointer's, as the user.
func (t *tempNames) sweep(c *Credential, base string) {
	uid := os.Geteuid()
	if c != nil {
		uid = int(c.UID)
	}
	key := fmt.Sprintf("%s\x00%d", base, uid)
	t.mu.Lock()
	done := t.swept[key]
	t.swept[key] = true
	t.mu.Unlock()
	if done {
		return
	}
	dir := base
	if dir == "" {
		dir = os.TempDir()
	}
	_ = asUser(c, func() error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || !strings.HasPrefix(name, t.family) || strings.HasPrefix(name, t.own) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
				continue
			}
			_ = os.RemoveAll(filepath.Join(dir, name))
		}
		return nil
	})
}
