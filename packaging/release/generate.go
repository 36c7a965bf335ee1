package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/packaging"
)

// Where the release's executables are installed: by the packages, and by
// hand from a tarball (bin/ copied to /usr/local/bin).
const (
	packageExe = "/usr/bin/sessiond"
	tarballExe = "/usr/local/bin/sessiond"
)

var programs = []string{"sessiond", "sessionctl"}

var shells = []string{"bash", "zsh", "fish"}

// generated are the files made once for every artifact.
type generated struct {
	man         []string                     // gzipped man pages
	completions map[string]map[string]string // shell → program → script
	docs        map[string]string            // shipped doc path (README.md, LICENSE, docs/x.md) → file
	config      string                       // the embedded default config
	pkgConfig   string                       // the packages' /etc/sessiond/sessiond.toml
	sysusers    string
	tmpfiles    string
	units       map[string]string // "package/system", "tarball/user", ... → rendered unit
}

// generate makes them, running the programs built for this host.
func (b *builder) generate(ctx context.Context, hostBin string) error {
	dir := filepath.Join(b.work, "gen")
	g := &b.gen
	write := func(rel string, data []byte) (string, error) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		return p, os.WriteFile(p, data, 0o644)
	}

	b.logf("man pages, completions, docs")
	raw := filepath.Join(b.work, "man")
	for _, prog := range programs {
		if _, err := b.run(ctx, filepath.Join(hostBin, prog), "man", raw); err != nil {
			return err
		}
	}
	pages, err := os.ReadDir(raw)
	if err != nil {
		return err
	}
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(raw, page.Name()))
		if err != nil {
			return err
		}
		p, err := write(filepath.Join("man1", page.Name()+".gz"), gzipped(data))
		if err != nil {
			return err
		}
		g.man = append(g.man, p)
	}
	if len(g.man) < 2 {
		return fmt.Errorf("man pages: only %d written", len(g.man))
	}

	g.completions = map[string]map[string]string{}
	for _, sh := range shells {
		g.completions[sh] = map[string]string{}
		for _, prog := range programs {
			out, err := b.run(ctx, filepath.Join(hostBin, prog), "completion", sh)
			if err != nil {
				return err
			}
			if g.completions[sh][prog], err = write(filepath.Join("completions", sh, prog), out); err != nil {
				return err
			}
		}
	}

	if err := b.generateDocs(write); err != nil {
		return err
	}

	if g.config, err = write("sessiond.toml", configfile.DefaultTOML()); err != nil {
		return err
	}
	pkgConfig, err := packageConfig(configfile.DefaultTOML())
	if err != nil {
		return err
	}
	if g.pkgConfig, err = write("package/sessiond.toml", pkgConfig); err != nil {
		return err
	}
	if g.sysusers, err = write("sessiond.sysusers", []byte(packaging.Sysusers)); err != nil {
		return err
	}
	if g.tmpfiles, err = write("sessiond.tmpfiles", []byte(packaging.Tmpfiles)); err != nil {
		return err
	}

	g.units = map[string]string{}
	for kind, exe := range map[string]string{"package": packageExe, "tarball": tarballExe} {
		for _, user := range []bool{false, true} {
			unit, err := packaging.SystemdUnit(user, exe, []string{"run"})
			if err != nil {
				return err
			}
			name := kind + "/system"
			if user {
				name = kind + "/user"
			}
			if g.units[name], err = write(filepath.Join("units", name, "sessiond.service"), []byte(unit)); err != nil {
				return err
			}
		}
	}
	return nil
}

// generateDocs copies README.md, LICENSE and docs/*.md, with every link to
// a file that is not shipped turned into plain text.
func (b *builder) generateDocs(write func(string, []byte) (string, error)) error {
	shipped := map[string]bool{"README.md": true, "LICENSE": true}
	docs, err := filepath.Glob(filepath.Join(b.Root, "docs", "*.md"))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no docs/*.md in %s", b.Root)
	}
	for _, d := range docs {
		shipped["docs/"+filepath.Base(d)] = true
	}
	b.gen.docs = map[string]string{}
	for _, rel := range slices.Sorted(maps.Keys(shipped)) {
		data, err := os.ReadFile(filepath.Join(b.Root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("docs: %w", err)
		}
		if strings.HasSuffix(rel, ".md") {
			data = []byte(shipLinks(string(data), rel, shipped))
		}
		if b.gen.docs[rel], err = write(filepath.Join("doc", rel), data); err != nil {
			return err
		}
	}
	return nil
}

// packageConfig is the default config with the sessiond group, which the
// packages create, allowed on the socket.
func packageConfig(def []byte) ([]byte, error) {
	const line = "allowed_groups = []\n"
	if !bytes.Contains(def, []byte("\n"+line)) {
		return nil, fmt.Errorf("the default config has no %q line to set the sessiond group in", strings.TrimSpace(line))
	}
	header := "# /etc/sessiond/sessiond.toml, as the sessiond package installs it: the embedded\n" +
		"# defaults (`sessiond config default`) but for allowed_groups.\n"
	group := "# The package creates the sessiond group; its members may use the socket:\n" +
		"#   sudo usermod -aG sessiond USER   (then log in again)\n" +
		"allowed_groups = [\"sessiond\"]\n"
	return append([]byte(header), bytes.Replace(def, []byte(line), []byte(group), 1)...), nil
}

// gzipped compresses data with no name and no time in the header, so that
// the same page gives the same bytes.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.Bytes()
}
