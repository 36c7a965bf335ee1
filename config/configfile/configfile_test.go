package configfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/sessiond/sessiond/config"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if got, want := c.Defaults.Timeout.Duration, 4*time.Hour; got != want {
		t.Errorf("timeout = %v, want %v", got, want)
	}
	if got, want := c.Defaults.WarnBefore.Duration, 30*time.Minute; got != want {
		t.Errorf("warn_before = %v, want %v", got, want)
	}
	if c.Defaults.WarnSignal.Num != 0 {
		t.Errorf("warn_signal = %v, want none by default", c.Defaults.WarnSignal)
	}
	if got, want := c.Defaults.StopSignal.Name, "SIGTERM"; got != want {
		t.Errorf("stop_signal = %q, want %q", got, want)
	}
	if got, want := c.Defaults.Checkpoint, "@every 5m"; got != want {
		t.Errorf("checkpoint = %q, want %q", got, want)
	}
	if got, want := c.OnShutdown, config.ShutdownStop; got != want {
		t.Errorf("on_shutdown = %q, want %q", got, want)
	}
	if got, want := int64(c.Defaults.CheckpointMaxFile), int64(10<<20); got != want {
		t.Errorf("checkpoint_max_file = %d, want %d", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		key, msg  string
	}{
		{"unknown key", "log_level = \"info\"\nbogus = 1\n", 2, "bogus", "unknown key"},
		{"unknown nested key", "[defaults]\ntimeout = \"1h\"\n\n[defaults.watch]\nignre = []\n", 5, "defaults.watch.ignre", "unknown key"},
		{"bad duration", "[defaults]\ntimeout = \"abc\"\n", 2, "defaults.timeout", "invalid duration"},
		{"zero timeout", "[defaults]\ntimeout = \"0s\"\n", 2, "defaults.timeout", "must be positive"},
		{"warn not before timeout", "[defaults]\ntimeout = \"1h\"\nwarn_before = \"1h\"\n", 3, "defaults.warn_before", "not shorter than timeout"},
		{"bad signal", "[defaults]\nstop_signal = \"SIGFOO\"\n", 2, "defaults.stop_signal", "unknown signal"},
		{"bad type", "\nlog_level = 3\n", 2, "log_level", "want a string in quotes"},
		{"bad level", "log_level = \"loud\"\n", 1, "log_level", "not one of"},
		{"bad shutdown", "on_shutdown = \"explode\"\n", 1, "on_shutdown", "not one of"},
		{"bad cron", "[defaults]\ncheckpoint = \"* * *\"\n", 2, "defaults.checkpoint", "invalid schedule"},
		{"bad restart", "[defaults]\nrestart = \"sometimes\"\n", 2, "defaults.restart", "not one of"},
		{"bad size", "log_max_size = \"lots\"\n", 1, "log_max_size", "invalid size"},
		{"syntax", "log_level = \n", 1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.toml", []byte(tt.src))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.File != "test.toml" {
				t.Errorf("file = %q, want test.toml", ce.File)
			}
			if ce.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", ce.Line, tt.line, err)
			}
			if tt.key != "" && ce.Key != tt.key {
				t.Errorf("key = %q, want %q", ce.Key, tt.key)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "test.toml:") {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
}

func TestParseOverridesDefaults(t *testing.T) {
	c, err := Parse("x.toml", []byte("max_sessions = 7\n[defaults]\ntimeout = \"2h\"\nwarn_signal = \"usr1\"\n[defaults.env]\nFOO = \"bar\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSessions != 7 || c.Defaults.Timeout.Duration != 2*time.Hour {
		t.Errorf("got max_sessions %d timeout %v, want 7 2h", c.MaxSessions, c.Defaults.Timeout)
	}
	if c.Defaults.WarnBefore.Duration != 30*time.Minute {
		t.Errorf("warn_before = %v, want the default 30m kept", c.Defaults.WarnBefore)
	}
	if c.Defaults.WarnSignal.Name != "SIGUSR1" {
		t.Errorf("warn_signal = %q, want SIGUSR1", c.Defaults.WarnSignal.Name)
	}
	if c.Defaults.Env["FOO"] != "bar" {
		t.Errorf("env FOO = %q, want bar", c.Defaults.Env["FOO"])
	}
}

func TestLoadMissingIsDefaults(t *testing.T) {
	c, found, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil || found {
		t.Fatalf("Load = found %v, err %v; want defaults", found, err)
	}
	if c.Defaults.Timeout.Duration != 4*time.Hour {
		t.Errorf("timeout = %v, want 4h", c.Defaults.Timeout)
	}
}

// A config path that names no plain file, or too large a one, is refused
// at once: never read without end, never blocked on.
func TestLoadRefusesWhatIsNoConfigFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# a comment\n"), 100000), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "is a device", fifo: "is a FIFO", dir: "is a directory", big: "larger than the 1024 KiB",
	} {
		done := make(chan error, 1)
		go func() { _, _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load(%s) = %v, want an error naming it and saying %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still running after 10 s", path)
		}
	}
}

func TestDefaultTOMLRoundTrips(t *testing.T) {
	// The printed default config must itself be a valid config file.
	p := filepath.Join(t.TempDir(), "sessiond.toml")
	if err := os.WriteFile(p, DefaultTOML(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, found, err := Load(p); err != nil || !found {
		t.Fatalf("Load(default) = %v, %v", found, err)
	}
}

func TestParseProject(t *testing.T) {
	base := Default().Defaults
	src := `[session]
command = ["claude", "-p", "go on"]
timeout = "90m"
warn_before = "10m"
restart = "on-failure"

[watch]
ignore = ["*.log"]

[[service]]
name = "web"
command = ["npm", "run", "dev"]
ready = "tcp://127.0.0.1:3000"
`
	s, err := ParseProject("sessiond.toml", []byte(src), base)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Command, " "); got != "claude -p go on" {
		t.Errorf("command = %q", got)
	}
	if s.Timeout.Duration != 90*time.Minute || s.WarnBefore.Duration != 10*time.Minute {
		t.Errorf("timeout/warn = %v/%v, want 90m/10m", s.Timeout, s.WarnBefore)
	}
	if s.StopGrace.Duration != 30*time.Second {
		t.Errorf("stop_grace = %v, want the default 30s", s.StopGrace)
	}
	if len(s.Watch.Ignore) != 1 || len(s.Services) != 1 || s.Services[0].Name != "web" {
		t.Errorf("watch/services = %v/%v", s.Watch.Ignore, s.Services)
	}
	if len(base.Command) != 0 {
		t.Errorf("base spec was changed: %v", base.Command)
	}
}

func TestParseProjectErrors(t *testing.T) {
	base := Default().Defaults
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"unknown session key", "[session]\ncomand = [\"x\"]\n", 2, "unknown key"},
		{"duplicate service", "[[service]]\nname = \"a\"\ncommand = [\"x\"]\n[[service]]\nname = \"a\"\ncommand = [\"y\"]\n", 5, "used twice"},
		{"service without command", "[[service]]\nname = \"a\"\n", 0, "is required"},
		{"bad mode", "[session]\ncheckpoint_mode = \"snapshot\"\n", 2, "not one of ref, commit"},
		{"negative grace", "[session]\nstop_grace = \"-1s\"\n", 2, "must not be negative"},
		{"memory_max not a size", "[session]\ncheckpoint = \"\"\nmemory_max = \"lots\"\n", 3, "invalid size"},
		{"memory_max too small", "[session]\nmemory_max = \"4K\"\n", 2, "too little for any command to start"},
		{"memory_high above memory_max", "[session]\nmemory_max = \"1G\"\nmemory_high = \"2G\"\n", 3, "above memory_max 1GiB"},
		{"pids_max of one", "[session]\npids_max = 1\n", 2, "too few"},
		{"cpu_weight out of range", "[session]\ncpu_weight = 20000\n", 2, "between 1 and 10000"},
		{"cpu_max not a share", "[session]\ncpu_max = \"fast\"\n", 2, "percentage of one CPU"},
		{"limits mode", "[session]\nlimits = \"maybe\"\n", 2, "strict, best-effort"},
		{"on_limit", "[session]\non_limit = \"retry\"\n", 2, "not one of wait, stop, ignore"},
		{"stall_timeout too short", "[session]\nstall_timeout = \"10ms\"\n", 2, "too short to tell a stall"},
		{"limit_jitter too long", "[session]\nlimit_jitter = \"2h\"\n", 2, "between 0 and 1h"},
		{"pool name", "[session]\npool = \"a pool\"\n", 2, "letters, digits"},
		{"priority", "[session]\npriority = 5000\n", 2, "between -1000 and 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProject("p.toml", []byte(tt.src), base)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if tt.line != 0 && ce.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", ce.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

func TestParseScheduleNeverPanics(t *testing.T) {
	for _, spec := range []string{"@every 5m", "*/5 * * * *", "0 */5 * * * *", "@hourly", "* * *", "@every -1s", "@every", "TZ=", "60 * * * *", "@bogus"} {
		_, _ = ParseSchedule(spec)
	}
	if _, err := ParseSchedule("@every 5m"); err != nil {
		t.Errorf("@every 5m: %v", err)
	}
	// An interval under a second is refused, not taken as every second.
	for _, spec := range []string{"@every -5m", "@every 0s", "@every 1ms", "@every 999ms"} {
		if _, err := ParseSchedule(spec); err == nil || !strings.Contains(err.Error(), "1s or more") {
			t.Errorf("%s: err = %v, want one saying the interval must be 1s or more", spec, err)
		}
	}
	for _, spec := range []string{"@every 1s", "@every 1500ms", "@every 2h"} {
		if _, err := ParseSchedule(spec); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	if _, err := ParseSchedule("61 * * * *"); err == nil {
		t.Error("61 * * * *: want an error")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add([]byte("[defaults]\ntimeout = \"1h\"\n"))
	f.Add([]byte("[[defaults.service]]\nname=\"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data)
		if err == nil && c == nil {
			t.Fatal("nil config without error")
		}
	})
}

func FuzzParseProject(f *testing.F) {
	f.Add([]byte("[session]\ncommand = [\"a\"]\ncheckpoint = \"@every 1m\"\n"))
	f.Add([]byte("[session]\ncheckpoint = \"TZ=x * * * * *\"\n"))
	base := Default().Defaults
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseProject("fuzz.toml", data, base)
	})
}

func TestProjectPathsStayInTheProject(t *testing.T) {
	base := Default().Defaults
	for _, src := range []string{
		"[session]\nprogress_file = \"/etc/x\"\n",
		"[session]\nprogress_file = \"../../../../etc/x\"\n",
		"[session]\nfeature_list = \"/etc/secret.json\"\n",
		"[session]\nfeature_list = \"a/../../b\"\n",
	} {
		_, err := ParseProject("p.toml", []byte(src), base)
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(err.Error(), "inside the project") && !strings.Contains(err.Error(), "relative to the project") {
			t.Errorf("%q: err = %v, want a line-2 error naming the key", src, err)
		}
	}
	if _, err := ParseProject("p.toml", []byte("[session]\nprogress_file = \"notes/progress.txt\"\nfeature_list = \"./features.json\"\n"), base); err != nil {
		t.Errorf("relative paths inside the project: %v", err)
	}
}

// TestWarnBeforeFitsAShortTimeout: a timeout of any length works without
// a warn_before; one given that does not fit names the key to change.
func TestWarnBeforeFitsAShortTimeout(t *testing.T) {
	base := Default().Defaults
	if base.WarnBefore.Duration != 30*time.Minute || !base.WarnBeforeAuto {
		t.Fatalf("default warn_before = %v (auto %v), want 30m, fitted", base.WarnBefore, base.WarnBeforeAuto)
	}
	for _, tt := range []struct{ timeout, want string }{{"4h", "30m"}, {"2h", "30m"}, {"1h", "15m"}, {"10m", "2m30s"}, {"10s", "2.5s"}, {"1s", "250ms"}} {
		s, err := ParseProject("sessiond.toml", []byte("[session]\ntimeout = \""+tt.timeout+"\"\n"), base)
		want, _ := time.ParseDuration(tt.want)
		if err != nil || s.WarnBefore.Duration != want {
			t.Errorf("timeout %s: warn_before %v, %v; want %s", tt.timeout, s.WarnBefore, err, tt.want)
		}
	}
	// Given, it is kept, and carried over a later timeout.
	s, err := ParseProject("sessiond.toml", []byte("[session]\nwarn_before = \"45m\"\n"), base)
	if err != nil || s.WarnBefore.Duration != 45*time.Minute || s.WarnBeforeAuto {
		t.Fatalf("warn_before 45m: %v (auto %v), %v", s.WarnBefore, s.WarnBeforeAuto, err)
	}
	_, err = ParseProject("sessiond.toml", []byte("[session]\ntimeout = \"10m\"\nwarn_before = \"30m\"\n"), base)
	if err == nil || !strings.Contains(err.Error(), "sessiond.toml:3: session.warn_before: 30m0s is not shorter than timeout 10m0s") || !strings.Contains(err.Error(), "--warn-before") {
		t.Errorf("a warn_before that does not fit: %v", err)
	}
	// The daemon's [defaults] may give it too.
	c, err := Parse("x.toml", []byte("[defaults]\ntimeout = \"10m\"\n"))
	if err != nil || c.Defaults.WarnBefore.Duration != 150*time.Second {
		t.Errorf("daemon defaults timeout 10m: warn_before %v, %v", c, err)
	}
	if _, err := Parse("x.toml", []byte("[defaults]\ntimeout = \"10m\"\nwarn_before = \"30m\"\n")); err == nil || !strings.Contains(err.Error(), "x.toml:3: defaults.warn_before") {
		t.Errorf("daemon defaults with a warn_before that does not fit: %v", err)
	}
}

// TestWrongTypesSayWhatTheyWant: a value of the wrong type is answered in
// a user's words, with the file, the line and the key.
func TestWrongTypesSayWhatTheyWant(t *testing.T) {
	base := Default().Defaults
	for _, tt := range []struct{ project, want string }{
		{"[session]\ncommand = \"true\"\n", `sessiond.toml:2: session.command: want an array, such as command = ["..."], not a string`},
		{"[session]\nenv = \"x\"\n", `sessiond.toml:2: session.env: want a table, such as [session.env] with KEY = "VALUE" lines, not string`},
		{"[session]\nconcurrent = \"yes\"\n", `sessiond.toml:2: session.concurrent: want true or false, such as concurrent = true, not a string`},
	} {
		_, err := ParseProject("sessiond.toml", []byte(tt.project), base)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: %v\nwant %s", tt.project, err, tt.want)
		}
	}
	if _, err := Parse("x.toml", []byte("max_sessions = \"x\"\n")); err == nil || err.Error() != "x.toml:1: max_sessions: want a whole number, such as max_sessions = 8, not a string" {
		t.Errorf("max_sessions = \"x\": %v", err)
	}
}

// TestEffectiveConfigRoundTrips: the effective config as sessiond config
// check prints it (TOML of the config) reads back as the same config, the
// worktree key included (false, not a table of Go fields).
func TestEffectiveConfigRoundTrips(t *testing.T) {
	c := Default()
	c.Defaults.Worktree = config.WorktreeOption{Enabled: true, Name: "feat-a"}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Enabled") {
		t.Errorf("the printed config has Go's field names:\n%s", b.String())
	}
	back, err := Parse("printed.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if back.Defaults.Worktree != c.Defaults.Worktree {
		t.Errorf("worktree %+v read back as %+v", c.Defaults.Worktree, back.Defaults.Worktree)
	}
}

// TestPools: [pool.NAME] tables, a named pool's and an account's, and
// what is wrong in one, at its line.
func TestPools(t *testing.T) {
	c, err := Parse("x.toml", []byte("[pool.nightly]\nmax_running = 3\nstagger = \"30s\"\n\n[pool.\"claude-code:/home/me/.claude\"]\nmax_running = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Pools["nightly"]; p.MaxRunning != 3 || p.Stagger.Duration != 30*time.Second {
		t.Errorf("pool nightly: %+v", p)
	}
	if p := c.Pools["claude-code:/home/me/.claude"]; p.MaxRunning != 2 {
		t.Errorf("the account's pool: %+v", p)
	}
	for src, want := range map[string]string{
		"[pool.a]\nmax_running = -1\n":      "x.toml:2: pool.a.max_running: must not be negative",
		"[pool.a]\nstagger = \"48h\"\n":     "x.toml:2: pool.a.stagger: must be between 0 and 24h",
		"[pool.a]\nmax_runing = 2\n":        "unknown key",
		"[pool.\"a b\"]\nmax_running = 1\n": "a pool's name holds letters",
	} {
		if _, err := Parse("x.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

// TestEffectiveConfigSetupAndDefaults: the effective config that sessiond config
// check prints (the config encoded as TOML) is a config file that reads
// back the same, worktree_setup's commands written as a user writes them,
// and every default of the queue and the environment filled in.
func TestEffectiveConfigSetupAndDefaults(t *testing.T) {
	src := `[defaults]
worktree_setup = ["npm ci", ["echo", "a <&> \"b\""]]
`
	c, err := Parse("a.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`worktree_setup = ["npm ci",["echo","a <&> \"b\""]]`, `inherit_env = true`, `on_limit = "wait"`,
		`limit_pauses_deadline = true`, `limit_jitter = "15s"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the effective config has no %s:\n%s", want, out)
		}
	}
	again, err := Parse("b.toml", b.Bytes())
	if err != nil {
		t.Fatalf("the effective config does not read back: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(again.Defaults.WorktreeSetup, c.Defaults.WorktreeSetup) {
		t.Errorf("worktree_setup read back as %+v, want %+v", again.Defaults.WorktreeSetup, c.Defaults.WorktreeSetup)
	}
}
