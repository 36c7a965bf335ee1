package ipc

import (
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	good := []struct {
		url                          string
		user, host, port, socket, sc string
	}{
		{"ssh://build1", "", "build1", "", "", "sessionctl"},
		{"ssh://ann@build1:2222", "ann", "build1", "2222", "", "sessionctl"},
		{"ssh://build1/run/s.sock", "", "build1", "", "/run/s.sock", "sessionctl"},
		{"ssh://build1/?sessionctl=/opt/bin/sessionctl", "", "build1", "", "", "/opt/bin/sessionctl"},
		{"ssh://[::1]:22", "", "::1", "22", "", "sessionctl"},
	}
	for _, g := range good {
		r, err := ParseHost(g.url)
		if err != nil {
			t.Errorf("ParseHost(%q): %v", g.url, err)
			continue
		}
		if r.User != g.user || r.Host != g.host || r.Port != g.port || r.Socket != g.socket || r.Sessionctl != g.sc {
			t.Errorf("ParseHost(%q) = %+v", g.url, *r)
		}
	}
	bad := []struct{ url, says string }{
		{"build1", "want ssh://"},
		{"http://build1", "only ssh://"},
		{"ssh://", "no host name"},
		{"ssh://-oProxyCommand=x", "no host name"},
		{"ssh://-l@build1", "bad user name"},
		{"ssh://ann:pw@build1", "no password"},
		{"ssh://build1:70000", `port "70000" is not a number from 1 to 65535`},
		{"ssh://build1:0", `port "0"`},
		{"ssh://build1?sesionctl=/x", `unknown parameter "sesionctl"`},
		{"ssh://build1#top", "no #fragment"},
		{"ssh://build1/a;b", "shell characters"},
		{"ssh://build1?sessionctl=$(id)", "shell characters"},
	}
	for _, b := range bad {
		_, err := ParseHost(b.url)
		if err == nil || !strings.Contains(err.Error(), b.says) {
			t.Errorf("ParseHost(%q) = %v, want an error saying %q", b.url, err, b.says)
		}
	}
}
