package term

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

func validSpec() Spec {
	return Spec{Argv: []string{"sh"}, Dir: "/tmp", SessionDir: "/tmp/s", LogPath: "/tmp/s/output.log", Env: []string{"A=1"}}
}

func TestSpecCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string // "" for valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"no argv", func(s *Spec) { s.Argv = nil }, "argv is empty"},
		{"relative dir", func(s *Spec) { s.Dir = "proj" }, `dir "proj" is not an absolute path`},
		{"no session dir", func(s *Spec) { s.SessionDir = "" }, "session_dir is empty"},
		{"relative log", func(s *Spec) { s.LogPath = "out.log" }, "log_path"},
		{"relative home", func(s *Spec) { s.Home = "~" }, "home"},
		{"bad env", func(s *Spec) { s.Env = []string{"A=1", "SECRETVALUE"} }, "env entry 1 is not KEY=VALUE"},
		{"long socket", func(s *Spec) { s.SessionDir = "/" + strings.Repeat("d", 120) }, "over the limit"},
		{"negative cap", func(s *Spec) { s.LogMaxSize = -1 }, "log_max_size"},
		{"keep too many", func(s *Spec) { s.LogKeep = 1000 }, "log_keep"},
		{"zero rows", func(s *Spec) { s.Size = ipc.TermSize{Cols: 80} }, "size"},
		{"huge size", func(s *Spec) { s.Size = ipc.TermSize{Cols: 65535, Rows: 65535} }, ""},
		{"scrollback", func(s *Spec) { s.Scrollback = -2 }, "scrollback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.edit(&s)
			err := s.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrSpec containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRETVALUE") {
				t.Fatalf("the error prints the environment: %v", err)
			}
		})
	}
}

func TestReadSpec(t *testing.T) {
	b, _ := json.Marshal(validSpec())
	s, err := ReadSpec(strings.NewReader(string(b)))
	if err != nil || s.Argv[0] != "sh" {
		t.Fatalf("%+v, %v", s, err)
	}
	for _, bad := range []string{"", "{", `{"argv":["sh"],"colour":1}`, string(b) + "{}", `{"argv":[]}`} {
		if _, err := ReadSpec(strings.NewReader(bad)); !errors.Is(err, ErrSpec) {
			t.Errorf("%q: got %v, want ErrSpec", bad, err)
		}
	}
}

func TestChildEnv(t *testing.T) {
	s := Spec{Env: []string{"HOME=/root", "PATH=/bin"}, Home: "/home/u"}
	if got := strings.Join(s.childEnv(), " "); got != "PATH=/bin HOME=/home/u TERM=xterm-256color" {
		t.Fatalf("env %q", got)
	}
	s = Spec{Env: []string{"TERM=screen", "HOME=/root"}}
	if got := strings.Join(s.childEnv(), " "); got != "TERM=screen HOME=/root" {
		t.Fatalf("env %q", got)
	}
}

// FuzzReadSpec: no input makes the spec decoder panic, and whatever it
// accepts passes Check.
func FuzzReadSpec(f *testing.F) {
	b, _ := json.Marshal(validSpec())
	f.Add(b)
	f.Add([]byte(`{"argv":["vi"],"dir":"/","session_dir":"/s","log_path":"/l","size":{"cols":0,"rows":0}}`))
	f.Add([]byte(`{"argv":["x"],"credential":{"uid":1,"gid":2,"groups":[3]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSpec(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("ReadSpec accepted a spec that Check refuses: %v", err)
		}
	})
}

func TestSpecDefaults(t *testing.T) {
	s := validSpec().withDefaults()
	if s.Size != (ipc.TermSize{Cols: DefaultCols, Rows: DefaultRows}) || s.Scrollback != DefaultScrollback {
		t.Fatalf("defaults %v, %d", s.Size, s.Scrollback)
	}
	big := validSpec()
	big.Size = ipc.TermSize{Cols: 65535, Rows: 65535}
	if got := big.withDefaults().Size; got != (ipc.TermSize{Cols: ipc.MaxTermCols, Rows: ipc.MaxTermRows}) {
		t.Fatalf("65535x65535 became %v", got)
	}
}
