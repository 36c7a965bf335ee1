package configfile

import (
	"errors"
	"strings"
	"testing"
)

func TestMetricsKeys(t *testing.T) {
	c, err := Parse("test.toml", []byte("metrics = true\nmetrics_listen = \"127.0.0.1:9477\"\n"))
	if err != nil || !c.Metrics || c.MetricsListen != "127.0.0.1:9477" {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	if d := Default(); d.Metrics || d.MetricsListen != "" {
		t.Errorf("metrics are on by default: %v %q", d.Metrics, d.MetricsListen)
	}
	for _, tc := range []struct {
		src  string
		line int
		msg  string
	}{
		{"log_level = \"info\"\nmetrics_listen = \"127.0.0.1:9477\"\n", 2, "metrics is false"},
		{"metrics = true\nmetrics_listen = \"9477\"\n", 2, "not host:port"},
		{"metrics = true\nmetrics_listen = \"localhost:http\"\n", 2, "not a number"},
		{"metrics = true\nmetrics_listen = \"[::1]:99999\"\n", 2, "not a number"},
		{"metrics = \"yes\"\n", 1, "want true or false"},
	} {
		_, err := Parse("test.toml", []byte(tc.src))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q) = %v; want line %d saying %q", tc.src, err, tc.line, tc.msg)
		}
	}
}

func TestNotifyAllowHosts(t *testing.T) {
	c, err := Parse("test.toml", []byte("notify_allow_hosts = [\"127.0.0.1:8080\", \"10.0.0.0/8\", \"hooks.internal\", \"[::1]:9\", \"fe80::/10:443\"]\n"))
	if err != nil || len(c.NotifyAllowHosts) != 5 {
		t.Fatalf("Parse = %+v, %v", c.NotifyAllowHosts, err)
	}
	for _, tc := range []struct {
		src string
		msg string
	}{
		{"log_level = \"info\"\nnotify_allow_hosts = [\"ok\", \"bad host!\"]\n", "neither a host name"},
		{"log_level = \"info\"\nnotify_allow_hosts = [\"127.0.0.1:99999\"]\n", "port"},
		{"log_level = \"info\"\nnotify_allow_hosts = [\"\"]\n", "empty"},
	} {
		_, err := Parse("test.toml", []byte(tc.src))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "notify_allow_hosts") {
			t.Errorf("Parse(%q) = %v; want line 2 naming notify_allow_hosts, saying %q", tc.src, err, tc.msg)
		}
	}
}
