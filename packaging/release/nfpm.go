package release

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// NFPM is the packager, run as `go run NFPM@NFPMVersion`.
const (
	NFPM        = "github.com/goreleaser/nfpm/v2/cmd/nfpm"
	NFPMVersion = "v2.45.2"
)

// The maintainer scripts: only what a package must do (the group, the
// directories, systemd told of the units; on removal the daemon stopped).
// None enables or starts the service.
var (
	//go:embed scripts/deb-postinst
	debPostinst string
	//go:embed scripts/deb-prerm
	debPrerm string
	//go:embed scripts/deb-postrm
	debPostrm string
	//go:embed scripts/rpm-post
	rpmPost string
	//go:embed scripts/rpm-preun
	rpmPreun string
	//go:embed scripts/rpm-postun
	rpmPostun string
)

const summary = "Supervisor for long-running AI coding-agent sessions"

const description = summary + `
sessiond launches coding agents (Claude Code, Codex CLI, aider, any command) in
their project directories and watches them: it warns a session before its
deadline, then stops it gracefully; takes git checkpoints that never touch the
user's branch, index or files; and whenever a session ends writes a handoff,
the project's session state and a progress-log entry, so that the next session
starts with context. sessionctl drives it over a Unix socket.`

// nfpmConfig is the part of nfpm's config this release uses (see
// nfpm.Config; unknown keys are errors there, so a typo fails the build).
type nfpmConfig struct {
	Name          string                   `json:"name"`
	Arch          string                   `json:"arch"`
	Platform      string                   `json:"platform"`
	Version       string                   `json:"version"`
	VersionSchema string                   `json:"version_schema"`
	Release       string                   `json:"release"`
	Section       string                   `json:"section"`
	Priority      string                   `json:"priority"`
	Maintainer    string                   `json:"maintainer"`
	Description   string                   `json:"description"`
	Vendor        string                   `json:"vendor"`
	License       string                   `json:"license"`
	Recommends    []string                 `json:"recommends"`
	MTime         time.Time                `json:"mtime"`
	Contents      []nfpmContent            `json:"contents"`
	Overrides     map[string]nfpmOverrides `json:"overrides"`
	RPM           map[string]string        `json:"rpm"`
	Deb           map[string]string        `json:"deb"`
}

type nfpmContent struct {
	Src      string       `json:"src,omitempty"`
	Dst      string       `json:"dst"`
	Type     string       `json:"type,omitempty"`
	Packager string       `json:"packager,omitempty"`
	FileInfo nfpmFileInfo `json:"file_info"`
}

type nfpmFileInfo struct {
	Mode  uint32 `json:"mode"` // decimal: nfpm reads an os.FileMode
	Owner string `json:"owner"`
	Group string `json:"group"`
}

type nfpmOverrides struct {
	Scripts map[string]string `json:"scripts"`
}

// nfpm writes the package of format for t and returns its path.
func (b *builder) nfpm(ctx context.Context, t Target, bin, format string) (string, error) {
	dir := filepath.Join(b.work, "nfpm", t.OS+"-"+t.Arch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	script := func(name, body string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, []byte(body), 0o755)
	}
	scripts := map[string]map[string]string{
		Deb: {"postinstall": debPostinst, "preremove": debPrerm, "postremove": debPostrm},
		RPM: {"postinstall": rpmPost, "preremove": rpmPreun, "postremove": rpmPostun},
	}
	overrides := map[string]nfpmOverrides{}
	for pkg, s := range scripts {
		o := nfpmOverrides{Scripts: map[string]string{}}
		for kind, body := range s {
			p, err := script(pkg+"-"+kind, body)
			if err != nil {
				return "", err
			}
			o.Scripts[kind] = p
		}
		overrides[pkg] = o
	}
	cfg := nfpmConfig{
		Name: "sessiond", Arch: t.Arch, Platform: t.OS,
		Version: PackageVersion(b.Version), VersionSchema: "none", Release: "1",
		Section: "admin", Priority: "optional",
		Maintainer: b.Maintainer, Description: description, Vendor: "sessiond", License: "Apache-2.0",
		// Checkpoints, worktrees and the shadow repositories of projects
		// that are not git's all run git; a session runs without it.
		Recommends: []string{"git"},
		MTime:      b.mtime,
		Overrides:  overrides,
		RPM:        map[string]string{"summary": summary, "group": "System Environment/Daemons", "compression": "zstd", "packager": b.Maintainer, "buildhost": "sessiond"},
		Deb:        map[string]string{"compression": "xz"},
	}
	for _, e := range b.gen.packageContents(bin) {
		c := nfpmContent{Src: e.src, Dst: e.path, Packager: e.packager, FileInfo: nfpmFileInfo{Mode: uint32(e.mode.Perm()), Owner: "root", Group: "root"}}
		switch {
		case e.config:
			c.Type = "config|noreplace"
		case e.license:
			c.Type = "license"
		}
		cfg.Contents = append(cfg.Contents, c)
	}
	// The package's own directories (/etc/sessiond, /usr/libexec/sessiond,
	// its doc and license directories) belong to it, so that removing it
	// (rpm -e, which leaves a directory nobody owns) and purging remove
	// them; shared ones (/usr/bin, man1) are not its.
	for _, d := range ownDirs(cfg.Contents, "/etc/sessiond") {
		cfg.Contents = append(cfg.Contents, nfpmContent{Dst: d, Type: "dir", FileInfo: nfpmFileInfo{Mode: 0o755, Owner: "root", Group: "root"}})
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	cfgPath := filepath.Join(dir, "nfpm-"+format+".json")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(b.work, "out", format+"-"+t.Arch)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, b.Go, "run", NFPM+"@"+NFPMVersion, "package", "--config", cfgPath, "--packager", format, "--target", out+string(filepath.Separator))
	cmd.Dir = dir
	// nfpm runs here: never cross-compiled, and never expanding $VARS of
	// this environment into the config.
	cmd.Env = withoutEnv(os.Environ(), "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nfpm: %w\n%s", err, msg)
	}
	made, err := filepath.Glob(filepath.Join(out, "*."+format))
	if err != nil || len(made) != 1 {
		return "", fmt.Errorf("nfpm wrote %v into %s, want one .%s", made, out, format)
	}
	dst := filepath.Join(b.Dist, filepath.Base(made[0]))
	return dst, os.Rename(made[0], dst)
}

// ownDirs are the directories of contents (and more) that hold "sessiond"
// as a component of their path: the package's own.
func ownDirs(contents []nfpmContent, more ...string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(d string) {
		for ; d != "/" && d != "."; d = path.Dir(d) {
			if !slices.Contains(strings.Split(d, "/"), "sessiond") || seen[d] {
				continue
			}
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, c := range contents {
		add(path.Dir(c.Dst))
	}
	for _, d := range more {
		add(d)
	}
	slices.Sort(out)
	return out
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
