package release

import (
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
)

// entry is one file of an artifact.
type entry struct {
	path     string // absolute in a package; relative to the top directory in a tarball
	src      string
	mode     fs.FileMode
	config   bool   // a conffile (deb), %config(noreplace) (rpm)
	license  bool   // rpm's %license
	packager string // deb or rpm, when only that packager ships it
}

// packageContents lists the files of the .deb and the .rpm for binaries
// in bin.
func (g *generated) packageContents(bin string) []entry {
	doc := "/usr/share/doc/sessiond"
	e := []entry{
		{path: "/usr/bin/sessiond", src: filepath.Join(bin, "sessiond"), mode: 0o755},
		{path: "/usr/bin/sessionctl", src: filepath.Join(bin, "sessionctl"), mode: 0o755},
		{path: "/usr/libexec/sessiond/sessiond-holder", src: filepath.Join(bin, "sessiond-holder"), mode: 0o755},
		{path: "/usr/libexec/sessiond/sessiond-logkeeper", src: filepath.Join(bin, "sessiond-logkeeper"), mode: 0o755},
		{path: "/usr/libexec/sessiond/sessionctl-mcp", src: filepath.Join(bin, "sessionctl-mcp"), mode: 0o755},
		{path: "/usr/libexec/sessiond/sessionctl-ui", src: filepath.Join(bin, "sessionctl-ui"), mode: 0o755},
		{path: "/usr/lib/systemd/system/sessiond.service", src: g.units["package/system"], mode: 0o644},
		{path: "/usr/lib/systemd/user/sessiond.service", src: g.units["package/user"], mode: 0o644},
		{path: "/usr/lib/sysusers.d/sessiond.conf", src: g.sysusers, mode: 0o644},
		{path: "/usr/lib/tmpfiles.d/sessiond.conf", src: g.tmpfiles, mode: 0o644},
		{path: "/etc/sessiond/sessiond.toml", src: g.pkgConfig, mode: 0o644, config: true},
		// Debian's place for the licence; rpm's is /usr/share/licenses.
		{path: doc + "/copyright", src: g.docs["LICENSE"], mode: 0o644, packager: Deb},
		{path: "/usr/share/licenses/sessiond/LICENSE", src: g.docs["LICENSE"], mode: 0o644, packager: RPM, license: true},
	}
	for _, rel := range slices.Sorted(maps.Keys(g.docs)) {
		e = append(e, entry{path: doc + "/" + rel, src: g.docs[rel], mode: 0o644})
	}
	for _, prog := range programs {
		e = append(e,
			entry{path: "/usr/share/bash-completion/completions/" + prog, src: g.completions["bash"][prog], mode: 0o644},
			// Debian's zsh looks in vendor-completions, Fedora's in site-functions.
			entry{path: "/usr/share/zsh/vendor-completions/_" + prog, src: g.completions["zsh"][prog], mode: 0o644, packager: Deb},
			entry{path: "/usr/share/zsh/site-functions/_" + prog, src: g.completions["zsh"][prog], mode: 0o644, packager: RPM},
			entry{path: "/usr/share/fish/vendor_completions.d/" + prog + ".fish", src: g.completions["fish"][prog], mode: 0o644},
		)
	}
	for _, page := range g.man {
		e = append(e, entry{path: "/usr/share/man/man1/" + filepath.Base(page), src: page, mode: 0o644})
	}
	return e
}

// tarballContents lists the files of a tarball for os with binaries in
// bin. Its tree is a prefix: bin/, libexec/, lib/ and share/ copied into /usr/local
// put everything where the system looks (the units then run
// /usr/local/bin/sessiond); README.md, LICENSE and docs/ sit beside them.
func (g *generated) tarballContents(goos, bin string) []entry {
	e := []entry{
		{path: "bin/sessiond", src: filepath.Join(bin, "sessiond"), mode: 0o755},
		{path: "bin/sessionctl", src: filepath.Join(bin, "sessionctl"), mode: 0o755},
		{path: "libexec/sessiond/sessiond-holder", src: filepath.Join(bin, "sessiond-holder"), mode: 0o755},
		{path: "libexec/sessiond/sessiond-logkeeper", src: filepath.Join(bin, "sessiond-logkeeper"), mode: 0o755},
		{path: "libexec/sessiond/sessionctl-mcp", src: filepath.Join(bin, "sessionctl-mcp"), mode: 0o755},
		{path: "libexec/sessiond/sessionctl-ui", src: filepath.Join(bin, "sessionctl-ui"), mode: 0o755},
		{path: "etc/sessiond/sessiond.toml", src: g.config, mode: 0o644},
	}
	if goos == "linux" {
		e = append(e,
			entry{path: "lib/systemd/system/sessiond.service", src: g.units["tarball/system"], mode: 0o644},
			entry{path: "lib/systemd/user/sessiond.service", src: g.units["tarball/user"], mode: 0o644},
			entry{path: "lib/sysusers.d/sessiond.conf", src: g.sysusers, mode: 0o644},
			entry{path: "lib/tmpfiles.d/sessiond.conf", src: g.tmpfiles, mode: 0o644},
		)
	}
	for _, rel := range slices.Sorted(maps.Keys(g.docs)) {
		e = append(e, entry{path: rel, src: g.docs[rel], mode: 0o644})
	}
	for _, prog := range programs {
		e = append(e,
			entry{path: "share/bash-completion/completions/" + prog, src: g.completions["bash"][prog], mode: 0o644},
			entry{path: "share/zsh/site-functions/_" + prog, src: g.completions["zsh"][prog], mode: 0o644},
			entry{path: "share/fish/vendor_completions.d/" + prog + ".fish", src: g.completions["fish"][prog], mode: 0o644},
		)
	}
	for _, page := range g.man {
		e = append(e, entry{path: path.Join("share/man/man1", filepath.Base(page)), src: page, mode: 0o644})
	}
	return e
}
