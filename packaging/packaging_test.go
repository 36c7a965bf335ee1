package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// render fills a unit template the way kardianos/service does for our
// placeholders: the description, the executable, the arguments, no env.
func render(tmpl, exe string, args []string) string {
	out := strings.ReplaceAll(tmpl, "{{Description}}", "sessiond test")
	out = strings.ReplaceAll(out, "{{Path | cmdEscape}}", exe)
	out = strings.ReplaceAll(out, "{{range Arguments}} {{. | cmd}}{{end}}", " "+strings.Join(args, " "))
	out = strings.ReplaceAll(out, "{{range EnvVars}}{{.}}\n{{end}}", "")
	return out
}

func TestUnitsHaveWhatDesignAsks(t *testing.T) {
	for name, unit := range map[string]string{"system": SystemUnit, "user": UserUnit} {
		t.Run(name, func(t *testing.T) {
			for _, want := range []string{"Type=notify", "Restart=on-failure", "RestartSec=2s", "KillMode=process", "StartLimitIntervalSec="} {
				if !strings.Contains(unit, want) {
					t.Errorf("%s unit lacks %q", name, want)
				}
			}
			unitSection := unit[:strings.Index(unit, "[Service]")]
			if !strings.Contains(unitSection, "StartLimitBurst=") {
				t.Errorf("%s unit: start limits must be in [Unit]", name)
			}
			var settings []string
			for _, line := range strings.Split(unit, "\n") {
				if !strings.HasPrefix(line, "#") {
					settings = append(settings, line)
				}
			}
			for _, bad := range []string{"ProtectHome", "ProtectSystem=strict", "RestartSec=120"} {
				if strings.Contains(strings.Join(settings, "\n"), bad) {
					t.Errorf("%s unit has %q", name, bad)
				}
			}
			if left := regexp.MustCompile(`\{\{[^}]*\}\}`).FindAllString(render(unit, "/bin/true", []string{"run"}), -1); len(left) > 0 {
				t.Errorf("%s unit: placeholders the test does not render: %v", name, left)
			}
		})
	}
	if !strings.Contains(UserUnit, "WantedBy=default.target") {
		t.Error("user unit must be WantedBy=default.target (user managers have no multi-user.target)")
	}
	if !strings.Contains(SystemUnit, "WantedBy=multi-user.target") {
		t.Error("system unit must be WantedBy=multi-user.target")
	}
}

// TestUnitsVerify runs systemd-analyze verify on the rendered units (there
// is no running systemd to install them into).
func TestUnitsVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	exe, err := filepath.Abs("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for name, unit := range map[string]string{"system": SystemUnit, "user": UserUnit} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sessiond.service")
			if err := os.WriteFile(p, []byte(render(unit, exe, []string{"run", "--config", "/etc/sessiond/sessiond.toml"})), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--man=no"}
			if name == "user" {
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
				t.Errorf("systemd-analyze verify (%v):\n%s", err, strings.Join(problems, "\n"))
			}
		})
	}
}
