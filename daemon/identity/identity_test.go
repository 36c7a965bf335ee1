package identity

import (
	"os"
	"slices"
	"testing"
)

func TestLookupSelf(t *testing.T) {
	u, err := Lookup(os.Geteuid())
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != os.Geteuid() || u.Home == "" || u.Name == "" {
		t.Errorf("got %+v, want uid %d with a home and a name", u, os.Geteuid())
	}
	if u.Switches() {
		t.Error("the daemon's own account switches")
	}
	if _, err := Lookup(1<<31 - 7); err == nil {
		t.Error("an unknown uid was looked up")
	}
}

func TestNilIsTheDaemon(t *testing.T) {
	var u *User
	if u.Switches() || u.Credential() != nil || u.Env() != nil || u.Validate() != nil || u.ID() != os.Geteuid() {
		t.Errorf("nil: switches %v, credential %v, env %v, id %d", u.Switches(), u.Credential(), u.Env(), u.ID())
	}
}

func TestCredentialAndEnv(t *testing.T) {
	u := &User{UID: os.Geteuid() + 1, GID: 7, Groups: []int{7, 9}, Home: "/home/x", Name: "x"}
	c := u.Credential()
	if int(c.Uid) != u.UID || c.Gid != 7 || !slices.Equal(c.Groups, []uint32{7, 9}) {
		t.Errorf("credential %+v", c)
	}
	if got, want := u.Env(), []string{"HOME=/home/x", "USER=x", "LOGNAME=x"}; !slices.Equal(got, want) {
		t.Errorf("env %q, want %q", got, want)
	}
	if !u.Switches() {
		t.Error("another uid does not switch")
	}
}

func TestValidate(t *testing.T) {
	for _, u := range []*User{{UID: -1, GID: 1}, {UID: 1000, GID: -2}, {UID: 1000, GID: 1000, Groups: []int{-5}}, {UID: 1<<32 - 1}} {
		if err := u.Validate(); err == nil {
			t.Errorf("%+v: valid", u)
		}
	}
	if err := (&User{UID: 1000, GID: 1000, Groups: []int{1000}}).Validate(); err != nil {
		t.Error(err)
	}
}
