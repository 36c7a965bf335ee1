package packaging

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// commands are the command lines the units are rendered with in these
// tests: the packages' own, one that needs every kind of quoting, and one
// whose words look like the definitions' placeholders, which must come out
// as they went in.
var commands = map[string][]string{
	"package":      {"/usr/bin/sessiond", "run"},
	"quoted":       {"/opt/session d/sessiond", "run", "--config", `/etc/odd "dir" 100%/$HOME\sessiond.toml`},
	"placeholders": {"/opt/@EXECUTABLE@/sessiond", "run", "--config", "/etc/@EXEC_START@@LOG@.toml", "@ARGUMENTS@", "@LABEL@"},
}

// placeholder matches a placeholder of the definitions left unfilled.
var placeholder = regexp.MustCompile(`@[A-Z_]+@`)

func renderAll(t *testing.T) map[string]string {
	t.Helper()
	units := map[string]string{}
	for cname, argv := range commands {
		for _, user := range []bool{false, true} {
			unit, err := SystemdUnit(user, argv[0], argv[1:])
			if err != nil {
				t.Fatalf("SystemdUnit(%v, %q): %v", user, argv, err)
			}
			kind := "system"
			if user {
				kind = "user"
			}
			units[kind+"/"+cname] = unit
		}
	}
	return units
}

func TestUnitsHaveWhatDesignAsks(t *testing.T) {
	for name, unit := range renderAll(t) {
		t.Run(name, func(t *testing.T) {
			for _, want := range []string{"Type=notify", "Restart=on-failure", "RestartSec=2s", "KillMode=process", "Delegate=yes", "StartLimitIntervalSec="} {
				if !strings.Contains(unit, want) {
					t.Errorf("unit lacks %q", want)
				}
			}
			if !strings.Contains(unit[:strings.Index(unit, "[Service]")], "StartLimitBurst=") {
				t.Error("start limits must be in [Unit]")
			}
			var settings []string
			for _, line := range strings.Split(unit, "\n") {
				if !strings.HasPrefix(line, "#") {
					settings = append(settings, line)
				}
			}
			for _, bad := range []string{"ProtectHome", "ProtectSystem=strict", "RestartSec=120", "{{", "}}"} {
				if strings.Contains(strings.Join(settings, "\n"), bad) {
					t.Errorf("unit has %q", bad)
				}
			}
			if name == "system/package" || name == "user/package" {
				if p := placeholder.FindString(unit); p != "" {
					t.Errorf("unit still has the placeholder %s", p)
				}
			}
			wanted := "WantedBy=multi-user.target"
			if strings.HasPrefix(name, "user/") {
				// User managers have no multi-user.target.
				wanted = "WantedBy=default.target"
			}
			if !strings.Contains(unit, wanted) {
				t.Errorf("unit is not %s", wanted)
			}
		})
	}
}

func TestExecStartRoundTrip(t *testing.T) {
	for name, argv := range commands {
		unit, err := SystemdUnit(false, argv[0], argv[1:])
		if err != nil {
			t.Fatal(err)
		}
		got, err := ExecStart(unit)
		if err != nil {
			t.Fatalf("%s: ExecStart: %v", name, err)
		}
		if !reflect.DeepEqual(got, argv) {
			t.Errorf("%s: ExecStart = %q, want %q", name, got, argv)
		}
	}
	if !strings.Contains(mustUnit(t, "/usr/bin/sessiond", "run"), "ExecStart=/usr/bin/sessiond run\n") {
		t.Error("a plain command line is written unquoted")
	}
}

func mustUnit(t *testing.T, exe string, args ...string) string {
	t.Helper()
	u, err := SystemdUnit(false, exe, args)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestExecStartRefuses(t *testing.T) {
	for _, unit := range []string{
		"[Service]\n",
		"ExecStart=\n",
		"ExecStart=/a\nExecStart=/b\n",
		`ExecStart=/a "open` + "\n",
		"ExecStart=/a %n\n",
		"ExecStart=/a $HOME\n",
		`ExecStart=/a \` + "\n",
	} {
		if got, err := ExecStart(unit); err == nil {
			t.Errorf("ExecStart(%q) = %q, want an error", unit, got)
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, argv := range [][]string{
		{"sessiond", "run"},
		{"/usr/bin/sessiond", "run", "--config", "/etc/a\nb"},
		{"/usr/bin/sessiond", "run", "--config", "/etc/{{.Path}}"},
	} {
		if _, err := SystemdUnit(false, argv[0], argv[1:]); err == nil {
			t.Errorf("SystemdUnit(%q) rendered, want an error", argv)
		}
		if _, err := LaunchdPlist("sessiond", argv[0], argv[1:], "/var/log/sessiond.log"); err == nil {
			t.Errorf("LaunchdPlist(%q) rendered, want an error", argv)
		}
	}
}

// TestUnitsVerify runs systemd-analyze verify on the rendered units, as the
// packages ship them and as `sessiond install` writes them (there is no
// running systemd to load them into).
func TestUnitsVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (.ci/run installs the systemd package)")
	}
	for name := range renderAll(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// ConditionFileIsExecutable= and ExecStart= name a file that must exist.
			exe := filepath.Join(dir, "bin dir", "sessiond")
			if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			argv := commands[strings.SplitN(name, "/", 2)[1]]
			unit, err := SystemdUnit(strings.HasPrefix(name, "user/"), exe, argv[1:])
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "sessiond.service")
			if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--man=no"}
			if strings.HasPrefix(name, "user/") {
				args = append(args, "--user")
			}
			out, err := exec.Command(sa, append(args, p)...).CombinedOutput()
			// Without systemd as PID 1, verify still parses the unit; only
			// complaints about this unit file count.
			var problems []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "sessiond.service") && !strings.Contains(line, "Failed to") {
					problems = append(problems, line)
				}
			}
			if len(problems) > 0 {
				t.Errorf("systemd-analyze verify (%v):\n%s\nunit:\n%s", err, strings.Join(problems, "\n"), unit)
			}
		})
	}
}

func TestLaunchdPlist(t *testing.T) {
	for _, name := range []string{"quoted", "placeholders"} {
		t.Run(name, func(t *testing.T) { testLaunchdPlist(t, commands[name]) })
	}
	plain, err := LaunchdPlist("sessiond", "/usr/local/bin/sessiond", []string{"run"}, "/var/log/sessiond.log")
	if err != nil {
		t.Fatal(err)
	}
	if p := placeholder.FindString(plain); p != "" {
		t.Errorf("plist still has the placeholder %s:\n%s", p, plain)
	}
	if !strings.Contains(plain, "<array>\n\t\t<string>/usr/local/bin/sessiond</string>\n\t\t<string>run</string>\n\t</array>") {
		t.Errorf("ProgramArguments are not one <string> a line:\n%s", plain)
	}
}

func testLaunchdPlist(t *testing.T, argv []string) {
	plist, err := LaunchdPlist("sessiond", argv[0], argv[1:], "/Users/me/Library/Logs/sessiond.log")
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(plist))
	dec.Strict = true
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("the plist is not well-formed XML: %v\n%s", err, plist)
			}
			break
		}
	}
	got, err := LaunchdArguments([]byte(plist))
	if err != nil {
		t.Fatalf("LaunchdArguments: %v", err)
	}
	if !reflect.DeepEqual(got, argv) {
		t.Errorf("LaunchdArguments = %q, want %q", got, argv)
	}
	for _, want := range []string{"<key>AbandonProcessGroup</key>\n\t<true/>", "<key>SuccessfulExit</key>\n\t\t<false/>", "<string>/Users/me/Library/Logs/sessiond.log</string>"} {
		if !strings.Contains(plist, want) {
			t.Errorf("plist lacks %q", want)
		}
	}
	for _, bad := range []string{"", "<plist>", "<plist><dict><key>ProgramArguments</key><string>x</string></dict></plist>", "<plist><dict><key>ProgramArguments</key><array></array></dict></plist>"} {
		if _, err := LaunchdArguments([]byte(bad)); err == nil {
			t.Errorf("LaunchdArguments(%q): want an error", bad)
		}
	}
}

// TestSnippets applies the sysusers.d and tmpfiles.d snippets to a scratch
// root with the real tools.
func TestSnippets(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Skip("systemd-sysusers not installed (.ci/run installs the systemd package)")
	}
	if out, err := exec.Command(sysusers, "--root", root, write("sessiond.conf", Sysusers)).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	group, err := os.ReadFile(filepath.Join(root, "etc", "group"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(group), "\nsessiond:x:") {
		t.Errorf("no sessiond group in %s/etc/group:\n%s", root, group)
	}

	tmpfiles, err := exec.LookPath("systemd-tmpfiles")
	if err != nil {
		t.Fatal("systemd-sysusers is installed but systemd-tmpfiles is not")
	}
	if out, err := exec.Command(tmpfiles, "--root", root, "--create", write("sessiond.conf", Tmpfiles)).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles: %v\n%s", err, out)
	}
	for dir, mode := range map[string]os.FileMode{"run/sessiond": 0o755, "var/lib/sessiond": 0o700} {
		fi, err := os.Stat(filepath.Join(root, dir))
		if err != nil {
			t.Errorf("tmpfiles.d did not create /%s: %v", dir, err)
			continue
		}
		if !fi.IsDir() || fi.Mode().Perm() != mode {
			t.Errorf("/%s: mode %v, want a directory %v", dir, fi.Mode(), mode)
		}
	}
}

func FuzzExecStart(f *testing.F) {
	for _, argv := range commands {
		u, err := SystemdUnit(false, argv[0], argv[1:])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(u)
	}
	f.Add("ExecStart='a b' \"c\\\"d\" %% $$\n")
	f.Add("ExecStart=\\")
	f.Fuzz(func(t *testing.T, unit string) {
		words, err := ExecStart(unit)
		if err != nil {
			return
		}
		// What it read, written again, reads the same.
		if words[0] == "" || !strings.HasPrefix(words[0], "/") || checkCommand(words[0], words[1:]) != nil {
			return
		}
		again, err := SystemdUnit(false, words[0], words[1:])
		if err != nil {
			t.Fatalf("SystemdUnit(%q): %v", words, err)
		}
		back, err := ExecStart(again)
		if err != nil || !reflect.DeepEqual(back, words) {
			t.Fatalf("round trip of %q: %q, %v", words, back, err)
		}
	})
}

func FuzzLaunchdArguments(f *testing.F) {
	p, err := LaunchdPlist("sessiond", "/usr/local/bin/sessiond", []string{"run", "--config", "/a b/<c>&"}, "/var/log/sessiond.log")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(p))
	f.Add([]byte("<plist><dict><key>ProgramArguments</key><array><string>/x</string></array></dict></plist>"))
	f.Fuzz(func(t *testing.T, plist []byte) {
		args, err := LaunchdArguments(plist)
		if err == nil && len(args) == 0 {
			t.Fatal("no error and no arguments")
		}
	})
}
