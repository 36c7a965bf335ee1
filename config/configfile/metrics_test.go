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
		{"metrics = \"yes\"\n", 1, "incompatible types"},
	} {
		_, err := Parse("test.toml", []byte(tc.src))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q) = %v; want line %d saying %q", tc.src, err, tc.line, tc.msg)
		}
	}
}
