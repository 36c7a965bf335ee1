// Package tokens keeps the access tokens of the web listener: made with
// `sessiond token create`, shown once, stored hashed (SHA-256 of the
// secret) in the daemon's state dir, listed and revoked there. A request
// with a token acts as the token's user, with exactly that user's rights
// on the socket; its scope (read or control) bounds what it may ask.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Scopes.
const (
	// ScopeRead may read: GET requests, attach read-only.
	ScopeRead = "read"
	// ScopeControl may do what its user may on the socket.
	ScopeControl = "control"
)

// File is the tokens' file in the state dir, mode 0600.
const File = "tokens.json"

// prefix begins every token: sdt_ID_SECRET.
const prefix = "sdt_"

// Token is one token as stored: never its secret, only its hash.
type Token struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	User    string    `json:"user"`
	UID     int       `json:"uid"`
	GID     int       `json:"gid"`
	Scope   string    `json:"scope"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
	// Hash is the SHA-256 of the secret, hex.
	Hash     string    `json:"hash"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

type file struct {
	Tokens []Token `json:"tokens"`
}

// Store is the tokens of a state dir.
type Store struct {
	path string

	mu     sync.Mutex
	cache  []Token
	loaded time.Time
}

// Open returns the store of the state dir.
func Open(stateDir string) *Store { return &Store{path: filepath.Join(stateDir, File)} }

// reloadEvery is how long a token list read is used: a revocation takes
// effect within it.
const reloadEvery = time.Second

// missReload is how soon an unknown token's id makes the list read again.
const missReload = 100 * time.Millisecond

func (s *Store) read() ([]Token, error) {
	var f file
	err := state.ReadJSON(s.path, &f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f.Tokens, err
}

// Create makes a token for the user name with scope, expiring after ttl
// (0: never), and returns it whole: the only time its secret is known.
func (s *Store) Create(name, userName, scope string, ttl time.Duration, now time.Time) (string, Token, error) {
	if scope != ScopeRead && scope != ScopeControl {
		return "", Token{}, fmt.Errorf("scope %q: want read or control", scope)
	}
	if ttl < 0 {
		return "", Token{}, fmt.Errorf("expires %s: want a positive duration", ttl)
	}
	u, err := user.Lookup(userName)
	if err != nil {
		return "", Token{}, fmt.Errorf("user %q: %w", userName, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	id := make([]byte, 4)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return "", Token{}, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", Token{}, err
	}
	sec := base64.RawURLEncoding.EncodeToString(secret)
	t := Token{ID: hex.EncodeToString(id), Name: name, User: u.Username, UID: uid, GID: gid, Scope: scope, Created: now.UTC(), Hash: hash(sec)}
	if ttl > 0 {
		t.Expires = now.Add(ttl).UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list, err := s.read()
	if err != nil {
		return "", Token{}, err
	}
	list = append(list, t)
	if err := state.EnsureDir(filepath.Dir(s.path)); err != nil {
		return "", Token{}, err
	}
	if err := state.WriteJSON(s.path, file{Tokens: list}); err != nil {
		return "", Token{}, err
	}
	s.cache, s.loaded = nil, time.Time{}
	return prefix + t.ID + "_" + sec, t, nil
}

// List returns the tokens, oldest first.
func (s *Store) List() ([]Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read()
}

// Revoke removes the token id (or every token of a user, for "user:NAME").
func (s *Store) Revoke(id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list, err := s.read()
	if err != nil {
		return 0, err
	}
	n := len(list)
	list = slices.DeleteFunc(list, func(t Token) bool {
		name, isUser := strings.CutPrefix(id, "user:")
		return t.ID == id || isUser && t.User == name
	})
	if len(list) == n {
		return 0, fmt.Errorf("no token %q (sessiond token ls lists them)", id)
	}
	if err := state.WriteJSON(s.path, file{Tokens: list}); err != nil {
		return 0, err
	}
	s.cache, s.loaded = nil, time.Time{}
	return n - len(list), nil
}

// ErrBadToken is a token that is malformed, unknown, revoked or expired.
var ErrBadToken = errors.New("token refused")

// Check returns the caller a token acts as, and its scope. A token that
// is no longer valid, or whose user is gone, is ErrBadToken.
func (s *Store) Check(token string, now time.Time) (ipc.Caller, string, error) {
	rest, ok := strings.CutPrefix(token, prefix)
	id, sec, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != 8 || sec == "" {
		return ipc.Caller{}, "", ErrBadToken
	}
	s.mu.Lock()
	stale := s.cache == nil || now.Sub(s.loaded) > reloadEvery || now.Before(s.loaded)
	var t *Token
	for try := 0; try < 2 && t == nil; try++ {
		if stale {
			list, err := s.read()
			if err != nil {
				s.mu.Unlock()
				return ipc.Caller{}, "", err
			}
			s.cache, s.loaded = append([]Token{}, list...), now
		}
		for i := range s.cache {
			if s.cache[i].ID == id {
				t = &s.cache[i]
			}
		}
		// A token made since the list was read: read it again, at most
		// every missReload (guesses do not make the daemon read the file
		// at their rate).
		stale = now.Sub(s.loaded) >= missReload
	}
	var found Token
	if t != nil {
		found = *t
	}
	s.mu.Unlock()
	want, _ := hex.DecodeString(found.Hash)
	got, _ := hex.DecodeString(hash(sec))
	if t == nil || len(want) != sha256.Size || subtle.ConstantTimeCompare(want, got) != 1 {
		return ipc.Caller{}, "", ErrBadToken
	}
	if !found.Expires.IsZero() && !now.Before(found.Expires) {
		return ipc.Caller{}, "", ErrBadToken
	}
	// The user must still be the one the token was made for.
	u, err := user.LookupId(strconv.Itoa(found.UID))
	if err != nil || u.Username != found.User {
		return ipc.Caller{}, "", ErrBadToken
	}
	gid, _ := strconv.Atoi(u.Gid)
	return ipc.Caller{UID: found.UID, GID: gid}, found.Scope, nil
}

func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
