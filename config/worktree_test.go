package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWorktreeOptionJSON(t *testing.T) {
	for _, tt := range []struct {
		in   WorktreeOption
		want string
	}{
		{WorktreeOption{}, "false"}, {WorktreeOption{Enabled: true}, "true"}, {WorktreeOption{Enabled: true, Name: "fix-1"}, `"fix-1"`},
	} {
		b, err := json.Marshal(tt.in)
		if err != nil || string(b) != tt.want {
			t.Errorf("marshal %+v = %s, %v; want %s", tt.in, b, err, tt.want)
		}
		var back WorktreeOption
		if err := json.Unmarshal(b, &back); err != nil || back != tt.in {
			t.Errorf("unmarshal %s = %+v, %v", b, back, err)
		}
	}
	var o WorktreeOption
	for _, bad := range []string{`3`, `"a b"`, `"-x"`, `"x.lock"`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
}

func TestSetupCommandsJSON(t *testing.T) {
	in := `["npm ci",["make","deps"]]`
	var s SetupCommands
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s[0].Shell != "npm ci" || strings.Join(s[1].Argv, " ") != "make deps" {
		t.Fatalf("decoded %+v", s)
	}
	if got := strings.Join(s[0].Args(), "|"); got != "/bin/sh|-c|npm ci" {
		t.Errorf("shell args = %s", got)
	}
	b, _ := json.Marshal(s)
	if string(b) != in {
		t.Errorf("round trip = %s, want %s", b, in)
	}
	c := s.Clone()
	c[1].Argv[0] = "changed"
	if s[1].Argv[0] != "make" {
		t.Error("Clone shares the argument vectors")
	}
}

func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]PortRange{"": {}, "20000-20999": {20000, 20999}, " 3000 ": {3000, 3000}, "1-65535": {1, 65535}} {
		got, err := ParsePortRange(in)
		if err != nil || got != want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0-10", "10-5", "1-70000", "a-b", "-", "20000-"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q): no error", bad)
		}
	}
	if r := (PortRange{10, 12}); r.Size() != 3 || !r.Contains(12) || r.Contains(13) || r.String() != "10-12" {
		t.Errorf("range %v: size %d", r, r.Size())
	}
}

func TestValidateWorktreeKeys(t *testing.T) {
	base := Spec{Timeout: Duration{1e9 * 60}, StopSignal: Signal{Num: 15, Name: "SIGTERM"}, CheckpointMode: CheckpointRef,
		Restart: RestartNo, RestartWindow: Duration{1e9}}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for key, mutate := range map[string]func(*Spec){
		"worktree_dir":      func(s *Spec) { s.WorktreeDir = "relative/dir" },
		"worktree_dir ~":    func(s *Spec) { s.WorktreeDir = "~/../../etc" },
		"worktree_setup[0]": func(s *Spec) { s.WorktreeSetup = SetupCommands{{Shell: "  "}} },
		"worktree_setup[1]": func(s *Spec) { s.WorktreeSetup = SetupCommands{{Shell: "ok"}, {Argv: []string{""}}} },
		"port_range":        func(s *Spec) { s.PortRange = PortRange{5, 4} },
	} {
		s := base
		mutate(&s)
		err := s.Validate()
		fe, ok := err.(*FieldError)
		if !ok || !strings.HasPrefix(key, fe.Key) {
			t.Errorf("%s: err = %v, want a FieldError on %s", key, err, key)
		}
	}
}

func FuzzPortRange(f *testing.F) {
	for _, s := range []string{"20000-20999", "", "1", "0-0", "65535-65535", "9-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParsePortRange(s)
		if err != nil {
			return
		}
		if !r.IsZero() && (r.First < 1 || r.Last > 65535 || r.First > r.Last) {
			t.Fatalf("ParsePortRange(%q) = %v: out of bounds", s, r)
		}
		back, err := ParsePortRange(r.String())
		if err != nil || back != r {
			t.Fatalf("round trip of %v: %v, %v", r, back, err)
		}
	})
}

func FuzzWorktreeJSON(f *testing.F) {
	for _, s := range []string{`true`, `false`, `"name"`, `null`, `["a",["b","c"]]`, `[[]]`, `[1]`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var o WorktreeOption
		if json.Unmarshal([]byte(s), &o) == nil && o.Name != "" {
			if err := CheckWorktreeName(o.Name); err != nil {
				t.Fatalf("decoded an invalid name %q: %v", o.Name, err)
			}
		}
		var c SetupCommands
		if json.Unmarshal([]byte(s), &c) == nil {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var back SetupCommands
			if err := json.Unmarshal(b, &back); err != nil || len(back) != len(c) {
				t.Fatalf("round trip of %s: %s, %v", s, b, err)
			}
		}
	})
}
