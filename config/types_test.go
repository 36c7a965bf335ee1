package config

import "testing"

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
