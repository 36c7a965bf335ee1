package config

import (
	"strings"
	"testing"
)

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{"SIGTERM", "SIGTERM", false}, {"term", "SIGTERM", false}, {"USR2", "SIGUSR2", false},
		{"9", "SIGKILL", false}, {"", "", false}, {"SIGFOO", "", true}, {"0", "", true}, {"999", "", true},
	}
	for _, tt := range tests {
		got, err := ParseSignal(tt.in)
		if (err != nil) != tt.err || got.Name != tt.want {
			t.Errorf("ParseSignal(%q) = %q, %v; want %q, err %v", tt.in, got.Name, err, tt.want, tt.err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"10MiB", 10 << 20, false}, {"512KiB", 512 << 10, false}, {"4096", 4096, false}, {"1GB", 1e9, false},
		{"-1", 0, true}, {"ten", 0, true}, {"99999999999GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || int64(got) != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// An environment variable name with a control character (ESC, a C1 such
// as U+009B) is refused like one with = or NUL: it would be printed to
// whoever lists the session's keys.
func TestValidateEnvNames(t *testing.T) {
	base := Spec{Timeout: Duration{1e9 * 60}, StopSignal: Signal{Num: 15, Name: "SIGTERM"}, CheckpointMode: CheckpointRef,
		Restart: RestartNo, RestartWindow: Duration{1e9}}
	for _, k := range []string{"", "A=B", "A\x00", "A\x1b[6n", "A\u009b6n", "A\x7f"} {
		s := base
		s.Env = map[string]string{k: "v"}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "invalid variable name") {
			t.Errorf("env name %q: %v, want refused", k, err)
		}
	}
	s := base
	s.Env = map[string]string{"PATH": "/bin", "ÉTÉ_X": "v"}
	if err := s.Validate(); err != nil {
		t.Errorf("plain names refused: %v", err)
	}
}
