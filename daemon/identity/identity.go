// Package identity is the one type for "the user we act as": the session
// user a root daemon runs a session's processes as and opens its files
// for, with the ids and groups the kernel checks and the home and name its
// processes are told. A nil *User is the daemon's own identity.
package identity

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// User is a user account as a login sets it up.
type User struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Groups are the supplementary groups. They replace the daemon's, so an
	// empty list means none (root's own groups never carry over).
	Groups []int `json:"groups,omitempty"`
	// Home and Name are the account's home directory and login name; ""
	// when the account database has none.
	Home string `json:"home,omitempty"`
	Name string `json:"name,omitempty"`
	// Shell is the account's login shell, from /etc/passwd; "" when it
	// names none (an account of another database, NIS or LDAP).
	Shell string `json:"shell,omitempty"`
}

// Lookup returns the account uid as a login would set it up: its primary
// group, every group it is a member of as its supplementary groups, its
// home and its name. An unknown uid is an error: guessing a gid would hand
// files to a group nobody chose.
func Lookup(uid int) (*User, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, fmt.Errorf("look up uid %d: %w", uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("look up uid %d: primary group %q is not a number", uid, u.Gid)
	}
	o := &User{UID: uid, GID: gid, Home: u.HomeDir, Name: u.Username, Shell: loginShell(uid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("look up the groups of uid %d: %w", uid, err)
	}
	for _, id := range ids {
		if g, err := strconv.Atoi(id); err == nil {
			o.Groups = append(o.Groups, g)
		}
	}
	return o, o.Validate()
}

// Self returns the daemon's own account, as far as the account database
// knows it (its ids always).
func Self() *User {
	if u, err := Lookup(os.Geteuid()); err == nil {
		return u
	}
	home, _ := os.UserHomeDir()
	return &User{UID: os.Geteuid(), GID: os.Getegid(), Home: home}
}

// Switches reports whether acting as u needs another identity than the
// daemon's: a nil user, or one with the daemon's effective uid, is the
// daemon's own.
func (u *User) Switches() bool { return u != nil && u.UID != os.Geteuid() }

// ID is the uid that u stands for: its own, or for nil the daemon's.
func (u *User) ID() int {
	if u == nil {
		return os.Geteuid()
	}
	return u.UID
}

// Credential returns u as the credential that starts a process with its
// identity, nil for nil: processes and file operations use the same ids.
func (u *User) Credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	c := &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
	for _, g := range u.Groups {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c
}

// Env is what a process of u is told of its account: HOME, USER, LOGNAME
// and SHELL, those that are known.
func (u *User) Env() []string {
	if u == nil {
		return nil
	}
	var env []string
	if u.Home != "" {
		env = append(env, "HOME="+u.Home)
	}
	if u.Name != "" {
		env = append(env, "USER="+u.Name, "LOGNAME="+u.Name)
	}
	if u.Shell != "" {
		env = append(env, "SHELL="+u.Shell)
	}
	return env
}

// passwdFile is the local account database; maxPasswd bounds what is read
// of it.
const (
	passwdFile = "/etc/passwd"
	maxPasswd  = 16 << 20
)

// loginShell is the login shell /etc/passwd gives uid, "" for none.
func loginShell(uid int) string {
	f, err := os.Open(passwdFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxPasswd))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	want := strconv.Itoa(uid)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[2] == want {
			return fields[6]
		}
	}
	return ""
}

// maxGroups is the kernel's NGROUPS_MAX.
const maxGroups = 65536

// Validate checks that the ids fit the kernel's 32-bit ids; -1
// (0xffffffff) means "no change" to the kernel and must never be passed on.
func (u *User) Validate() error {
	if u == nil {
		return nil
	}
	ok := func(id int) bool { return id >= 0 && int64(id) < 1<<32-1 }
	if !ok(u.UID) || !ok(u.GID) {
		return fmt.Errorf("user uid %d, gid %d: ids must be between 0 and 4294967294", u.UID, u.GID)
	}
	if len(u.Groups) > maxGroups {
		return fmt.Errorf("user uid %d: %d supplementary groups, more than the kernel's %d", u.UID, len(u.Groups), maxGroups)
	}
	for _, g := range u.Groups {
		if !ok(g) {
			return fmt.Errorf("user uid %d: supplementary group %d out of range", u.UID, g)
		}
	}
	return nil
}
