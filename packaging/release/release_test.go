package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVersion is stamped into the test builds: a describe of a tag, so
// that the package version mapping is exercised too.
const testVersion = "v1.2.3-4-gabcdef0"

func TestPackageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":              "1.2.3",
		"1.2.3":               "1.2.3",
		"v2":                  "2",
		"v1.2.3-rc1":          "1.2.3~rc1",
		"v1.2.3-4-gabc1234":   "1.2.3+4.gabc1234",
		"v1.2.3-4-gabc-dirty": "1.2.3+4.gabc.dirty",
		"v1.2.3-dirty":        "1.2.3+dirty",
		"abc1234":             "0.0.0+git.abc1234",
		"abc1234-dirty":       "0.0.0+git.abc1234.dirty",
		"1b8e67e-dirty":       "0.0.0+git.1b8e67e.dirty",
		"dev":                 "0.0.0+git.dev",
	} {
		if got := PackageVersion(in); got != want {
			t.Errorf("PackageVersion(%q) = %q, want %q", in, got, want)
		}
	}
	// Hashes that start with digits, or are all digits, are not versions.
	for _, h := range []string{"1234abc", "1234567", "1234567-dirty"} {
		if got := PackageVersion(h); got != "0.0.0+git."+strings.ReplaceAll(h, "-", ".") {
			t.Errorf("PackageVersion(%q) = %q", h, got)
		}
	}
	if _, err := exec.LookPath("dpkg"); err == nil {
		// dpkg orders them as a release would: rc < release < later commits.
		order := []string{"1.2.3~rc1", "1.2.3", "1.2.3+4.gabc1234", "1.2.4"}
		for i := 0; i+1 < len(order); i++ {
			if err := exec.Command("dpkg", "--compare-versions", order[i], "lt", order[i+1]).Run(); err != nil {
				t.Errorf("dpkg: %s is not before %s", order[i], order[i+1])
			}
		}
	}
}

func TestShipLinks(t *testing.T) {
	shipped := map[string]bool{"README.md": true, "LICENSE": true, "docs/cli.md": true, "docs/operations.md": true}
	md := "See [docs/cli.md](docs/cli.md), [the guide](docs/operations.md#security), [top](#set-up),\n" +
		"[site](https://example.com/x), [bench/README.md](bench/README.md) and [the demo](docs/demo/run.sh).\n"
	got := shipLinks(md, "README.md", shipped)
	want := "See [docs/cli.md](docs/cli.md), [the guide](docs/operations.md#security), [top](#set-up),\n" +
		"[site](https://example.com/x), `bench/README.md` (in the source repository) and the demo (`docs/demo/run.sh` in the source repository).\n"
	if got != want {
		t.Errorf("shipLinks:\n got %q\nwant %q", got, want)
	}
	if got := shipLinks("[cli](cli.md) [up](../README.md) [x](../bench/x.md)", "docs/operations.md", shipped); got != "[cli](cli.md) [up](../README.md) x (`../bench/x.md` in the source repository)" {
		t.Errorf("relative to docs/: %q", got)
	}
}

func TestPackageConfig(t *testing.T) {
	out, err := packageConfig([]byte("# x\nsocket = \"\"\nallowed_groups = []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "\nallowed_groups = [\"sessiond\"]\n") || strings.Contains(string(out), "allowed_groups = []") {
		t.Errorf("packageConfig:\n%s", out)
	}
	if _, err := packageConfig([]byte("allowed_groups = [\"x\"]\n")); err == nil {
		t.Error("a default without the line is not an error")
	}
}

// built is one Build of the host's Linux target, shared by the tests.
var built struct {
	once      sync.Once
	dist      string
	artifacts []string
	err       error
	took      time.Duration
}

func buildOnce(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the packages are built and installed on Linux")
	}
	built.once.Do(func() {
		built.dist, built.err = os.MkdirTemp("", "sessiond-dist-")
		if built.err != nil {
			return
		}
		start := time.Now()
		var log bytes.Buffer
		built.artifacts, built.err = Build(context.Background(), Options{
			Root: "../..", Dist: built.dist, Version: testVersion,
			Targets: []Target{{"linux", runtime.GOARCH}},
			Formats: []string{Deb, RPM, Tarball},
			Log:     &log,
		})
		built.took = time.Since(start)
		if built.err != nil {
			built.err = fmt.Errorf("%w\n%s", built.err, log.String())
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	t.Logf("release build took %v", built.took.Round(time.Millisecond))
	return built.artifacts
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dist != "" {
		os.RemoveAll(built.dist)
	}
	os.Exit(code)
}

func artifact(t *testing.T, suffix string) string {
	t.Helper()
	for _, a := range buildOnce(t) {
		if strings.HasSuffix(a, suffix) {
			return a
		}
	}
	t.Fatalf("no *%s among %v", suffix, built.artifacts)
	return ""
}

func TestSums(t *testing.T) {
	sums := artifact(t, "SHA256SUMS")
	data, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(built.artifacts)-1 {
		t.Errorf("SHA256SUMS has %d lines for %d artifacts", len(lines), len(built.artifacts)-1)
	}
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		content, err := os.ReadFile(filepath.Join(filepath.Dir(sums), name))
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(content)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: SHA256SUMS says %s", name, sum)
		}
	}
}

// TestTarball reads the tarball: its layout, modes, the rendered units, and
// that no shipped markdown links to a file the tarball does not hold.
func TestTarball(t *testing.T) {
	tgz := artifact(t, "linux-"+runtime.GOARCH+".tar.gz")
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	top := "sessiond-" + testVersion + "-linux-" + runtime.GOARCH + "/"
	files := map[string][]byte{}
	modes := map[string]int64{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h.Name, top) {
			t.Errorf("%s is outside %s", h.Name, top)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		rel := strings.TrimPrefix(h.Name, top)
		modes[rel] = h.Mode
		if h.Typeflag == tar.TypeReg {
			if files[rel], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	for rel, mode := range map[string]int64{
		"bin/sessiond": 0o755, "bin/sessionctl": 0o755, "libexec/sessiond/sessiond-holder": 0o755, "libexec/sessiond/sessiond-logkeeper": 0o755, "libexec/sessiond/sessionctl-mcp": 0o755, "libexec/sessiond/sessionctl-ui": 0o755, "README.md": 0o644, "LICENSE": 0o644, "docs/operations.md": 0o644,
		"etc/sessiond/sessiond.toml": 0o644, "lib/systemd/system/sessiond.service": 0o644, "lib/systemd/user/sessiond.service": 0o644,
		"lib/sysusers.d/sessiond.conf": 0o644, "lib/tmpfiles.d/sessiond.conf": 0o644,
		"share/man/man1/sessiond.1.gz": 0o644, "share/man/man1/sessionctl-ps.1.gz": 0o644, "share/man/man1/sessiond-install.1.gz": 0o644,
		"share/bash-completion/completions/sessionctl": 0o644, "share/zsh/site-functions/_sessiond": 0o644,
		"share/fish/vendor_completions.d/sessionctl.fish": 0o644,
	} {
		if _, ok := files[rel]; !ok {
			t.Errorf("the tarball lacks %s", rel)
		} else if modes[rel] != mode {
			t.Errorf("%s: mode %o, want %o", rel, modes[rel], mode)
		}
	}
	if u := string(files["lib/systemd/system/sessiond.service"]); !strings.Contains(u, "ExecStart=/usr/local/bin/sessiond run\n") || strings.Contains(u, "{{") {
		t.Errorf("the tarball's system unit is not rendered for /usr/local/bin:\n%s", u)
	}
	if !strings.Contains(string(files["LICENSE"]), "Apache License\n                           Version 2.0, January 2004") ||
		!strings.Contains(string(files["LICENSE"]), "END OF TERMS AND CONDITIONS") {
		t.Error("LICENSE is not the full Apache-2.0 text")
	}
	if !strings.Contains(string(files["share/zsh/site-functions/_sessiond"]), "#compdef sessiond") {
		t.Error("the zsh completion is not a #compdef file")
	}
	checkLinks(t, files)
}

// checkLinks fails on a relative link in a shipped markdown file whose
// target is not shipped.
func checkLinks(t *testing.T, files map[string][]byte) {
	t.Helper()
	n := 0
	for rel, data := range files {
		if !strings.HasSuffix(rel, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target, _, _ := strings.Cut(m[2], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			n++
			if _, ok := files[path.Join(path.Dir(rel), target)]; !ok {
				t.Errorf("%s links to %s, which is not shipped", rel, m[2])
			}
		}
	}
	if n == 0 {
		t.Error("no relative link found in the shipped docs: the check checked nothing")
	}
}

// overlay is a copy-on-write view of this machine — an overlayfs over /
// in a private mount namespace, with its own /run and /tmp — where a
// package can be installed for real, maintainer scripts and all, while the
// machine itself stays as it is.
type overlay struct {
	pid   int
	root  string // the view, as seen inside the namespace
	upper string // what changed
}

// hostState are the paths of sessiond's a machine may hold without the
// package (make run as root keeps its state in /var/lib/sessiond): the
// view starts without them, as a machine sessiond was never on.
var hostState = []string{"/var/lib/sessiond", "/etc/sessiond"}

func newOverlay(t *testing.T) *overlay {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("installing a package needs root (the tests run as root here and in CI)")
	}
	for _, tool := range []string{"unshare", "nsenter", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: %v", tool, err)
		}
	}
	base := t.TempDir()
	o := &overlay{root: base + "/root", upper: base + "/upper"}
	setup := strings.Join([]string{
		"mount -t tmpfs tmpfs " + base,
		"mkdir " + o.root + " " + o.upper + " " + base + "/work",
		"mount -t overlay overlay -o lowerdir=/,upperdir=" + o.upper + ",workdir=" + base + "/work " + o.root,
		"mount --rbind /proc " + o.root + "/proc",
		"mount --rbind /dev " + o.root + "/dev",
		"mount --rbind /sys " + o.root + "/sys",
		// No systemd runs in the view, whatever the machine has.
		"mount -t tmpfs tmpfs " + o.root + "/run",
		"mount -t tmpfs tmpfs " + o.root + "/tmp",
		"rm -rf " + o.root + strings.Join(hostState, " "+o.root),
		"echo ready",
		"exec cat >/dev/null",
	}, "\n")
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-ec", setup)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("overlay setup failed (%v): %s%s", err, line, stderr.String())
	}
	o.pid = cmd.Process.Pid
	return o
}

// host is p inside the view, as this process reaches it.
func (o *overlay) host(p string) string {
	return "/proc/" + strconv.Itoa(o.pid) + "/root" + o.root + p
}

// run runs argv chrooted in the view and returns its output.
func (o *overlay) run(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	c := exec.Command("nsenter", append([]string{"--mount=/proc/" + strconv.Itoa(o.pid) + "/ns/mnt", "--", "chroot", o.root}, argv...)...)
	c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive", "HOME=/root"}
	out, err := c.CombinedOutput()
	return string(out), err
}

func (o *overlay) must(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := o.run(t, argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// changed lists the files the view gained, outside the package managers'
// own records and caches.
func (o *overlay) changed(t *testing.T, ignore *regexp.Regexp) []string {
	t.Helper()
	var list []string
	upper := "/proc/" + strconv.Itoa(o.pid) + "/root" + o.upper
	_ = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(p, upper)
		if d.Type()&fs.ModeCharDevice != 0 && slices.Contains(hostState, rel) {
			return nil // the view's own removal of the machine's state
		}
		if !ignore.MatchString(rel) {
			list = append(list, rel)
		}
		return nil
	})
	return list
}

// TestDebInstall installs the .deb with dpkg -i into a copy-on-write view
// of this machine, runs both programs from it, checks the files, their
// modes and the conffile, then removes and purges it and checks that
// nothing of it is left.
func TestDebInstall(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("dpkg is not installed: this is not a Debian machine")
	}
	deb := artifact(t, ".deb")
	if out, err := exec.Command("dpkg-deb", "-f", deb, "Recommends").Output(); err != nil || strings.TrimSpace(string(out)) != "git" {
		t.Errorf("the .deb recommends %q (%v), want git", out, err)
	}
	o := newOverlay(t)
	data, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.host("/tmp/sessiond.deb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := o.run(t, "dpkg", "-L", "sessiond"); err == nil {
		t.Fatalf("sessiond is installed on this machine already:\n%s", out)
	}
	hadGroup := strings.Contains(o.must(t, "getent", "group"), "\nsessiond:") // before
	start := time.Now()
	out := o.must(t, "dpkg", "-i", "/tmp/sessiond.deb")
	t.Logf("dpkg -i took %v", time.Since(start).Round(time.Millisecond))
	if strings.Contains(out, "warning") {
		t.Errorf("dpkg -i warned:\n%s", out)
	}

	// What dpkg says it installed is there, with its modes.
	listed := strings.Fields(o.must(t, "dpkg", "-L", "sessiond"))
	var files []string
	for _, p := range listed {
		fi, err := os.Lstat(o.host(p))
		if err != nil {
			t.Errorf("dpkg -L lists %s, which is not there: %v", p, err)
			continue
		}
		if !fi.IsDir() {
			files = append(files, p)
		}
	}
	modes := map[string]fs.FileMode{
		"/usr/bin/sessiond": 0o755, "/usr/bin/sessionctl": 0o755,
		"/usr/libexec/sessiond/sessiond-holder": 0o755, "/usr/libexec/sessiond/sessiond-logkeeper": 0o755, "/usr/libexec/sessiond/sessionctl-mcp": 0o755, "/usr/libexec/sessiond/sessionctl-ui": 0o755,
		"/usr/lib/systemd/system/sessiond.service": 0o644, "/usr/lib/systemd/user/sessiond.service": 0o644,
		"/usr/lib/sysusers.d/sessiond.conf": 0o644, "/usr/lib/tmpfiles.d/sessiond.conf": 0o644,
		"/etc/sessiond/sessiond.toml": 0o644, "/usr/share/doc/sessiond/copyright": 0o644,
		"/usr/share/doc/sessiond/README.md": 0o644, "/usr/share/doc/sessiond/docs/operations.md": 0o644,
		"/usr/share/man/man1/sessiond.1.gz": 0o644, "/usr/share/man/man1/sessionctl.1.gz": 0o644,
		"/usr/share/bash-completion/completions/sessiond": 0o644, "/usr/share/zsh/vendor-completions/_sessionctl": 0o644,
		"/usr/share/fish/vendor_completions.d/sessiond.fish": 0o644,
	}
	for p, mode := range modes {
		fi, err := os.Stat(o.host(p))
		if err != nil {
			t.Errorf("%s is not installed: %v", p, err)
			continue
		}
		if fi.Mode().Perm() != mode || !fi.Mode().IsRegular() {
			t.Errorf("%s: mode %v, want a file %v", p, fi.Mode(), mode)
		}
	}
	// The maintainer script made the group and the directories.
	if !strings.Contains(o.must(t, "getent", "group", "sessiond"), "sessiond:") {
		t.Error("no sessiond group after install")
	}
	for dir, mode := range map[string]fs.FileMode{"/var/lib/sessiond": 0o700, "/run/sessiond": 0o755} {
		if fi, err := os.Stat(o.host(dir)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s after install: %v, %v; want mode %v", dir, fi, err, mode)
		}
	}
	// The conffile.
	if conf := o.must(t, "dpkg-query", "-W", "-f=${Conffiles}", "sessiond"); !strings.Contains(conf, "/etc/sessiond/sessiond.toml ") {
		t.Errorf("conffiles: %q", conf)
	}

	// The programs run from it.
	if out := o.must(t, "/usr/bin/sessiond", "version"); strings.TrimSpace(out) != "sessiond "+testVersion {
		t.Errorf("sessiond version: %q", out)
	}
	if out := o.must(t, "/usr/bin/sessionctl", "--help"); !strings.Contains(out, "sessionctl talks to sessiond") {
		t.Errorf("sessionctl --help:\n%s", out)
	}
	checkMCPStarts(t, o)
	checkHolderInstalled(t, o)
	if out := o.must(t, "/usr/bin/sessiond", "config", "check", "--config", "/etc/sessiond/sessiond.toml"); !strings.Contains(out, `allowed_groups = ["sessiond"]`) {
		t.Errorf("the packaged config, checked:\n%s", out)
	}
	if out, err := o.run(t, "systemd-analyze", "verify", "--man=no", "/usr/lib/systemd/system/sessiond.service"); err == nil || out != "" {
		// Without systemd as PID 1 verify exits non-zero; only complaints
		// about the unit itself count.
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "sessiond.service") && !strings.Contains(line, "Failed to") {
				t.Errorf("systemd-analyze verify of the installed unit: %s", line)
			}
		}
	}
	if out, err := o.run(t, "/usr/bin/sessiond", "install"); err == nil || !strings.Contains(out, "systemd is not running") {
		t.Errorf("sessiond install on a host without systemd: %v\n%s", err, out)
	}

	// remove keeps the changed conffile, purge takes it and the rest.
	if err := os.WriteFile(o.host("/etc/sessiond/sessiond.toml"), []byte("log_level = \"debug\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.must(t, "dpkg", "-r", "sessiond")
	if data, err := os.ReadFile(o.host("/etc/sessiond/sessiond.toml")); err != nil || string(data) != "log_level = \"debug\"\n" {
		t.Errorf("dpkg -r did not keep the changed conffile: %q, %v", data, err)
	}
	if st := o.must(t, "dpkg-query", "-W", "-f=${db:Status-Status}", "sessiond"); st != "config-files" {
		t.Errorf("after dpkg -r the package is %q, want config-files", st)
	}
	o.must(t, "dpkg", "--purge", "sessiond")
	if out, err := o.run(t, "dpkg", "-L", "sessiond"); err == nil {
		t.Errorf("dpkg -L still lists the purged package:\n%s", out)
	}
	for _, p := range append(files, "/etc/sessiond", "/usr/share/doc/sessiond", "/var/lib/sessiond", "/run/sessiond") {
		if _, err := os.Lstat(o.host(p)); err == nil {
			t.Errorf("%s is left after purge", p)
		}
	}
	// Nothing else either: the view's changes are dpkg's and apt's records,
	// logs and caches, man-db's index, and the group (system groups stay
	// after a purge, as Debian policy has it).
	ignore := regexp.MustCompile(`^/(var/lib/dpkg/|var/log/|var/cache/|etc/(group|gshadow|passwd|shadow|subgid|subuid)-?$|etc/\.pwd\.lock$|tmp/|run/)`)
	if left := o.changed(t, ignore); len(left) > 0 {
		t.Errorf("files left in the machine after purge: %q", left)
	}
	if all := o.changed(t, regexp.MustCompile(`^$`)); len(all) == 0 {
		t.Error("the view shows no change at all: the check above saw nothing")
	} else {
		t.Logf("after purge the view differs from the machine in %d files, all records, logs and caches", len(all))
	}
	if !hadGroup {
		if out, _ := o.run(t, "getent", "group", "sessiond"); !strings.Contains(out, "sessiond:") {
			t.Error("the sessiond group went with the purge; system groups stay")
		}
	}
}

// TestRPMInstall installs the .rpm with rpm into a copy-on-write view of
// this machine (its scriptlets run for real), runs sessiond from it, checks
// %config(noreplace), then erases it.
func TestRPMInstall(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skip("rpm is not installed (.ci/run installs it)")
	}
	rpm := artifact(t, ".rpm")
	out, err := exec.Command("rpm", "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILEUSERNAME} %{FILENAMES}\n]", rpm).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm -qp: %v\n%s", err, out)
	}
	listing := string(out)
	for _, want := range []string{
		"cn -rw-r--r-- root /etc/sessiond/sessiond.toml",
		" -rwxr-xr-x root /usr/bin/sessiond",
		" -rw-r--r-- root /usr/lib/systemd/system/sessiond.service",
		" -rw-r--r-- root /usr/share/zsh/site-functions/_sessiond",
		"l -rw-r--r-- root /usr/share/licenses/sessiond/LICENSE",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("rpm lacks %q:\n%s", want, listing)
		}
	}
	if out, err := exec.Command("rpm", "-qp", "--recommends", rpm).Output(); err != nil || strings.TrimSpace(string(out)) != "git" {
		t.Errorf("the .rpm recommends %q (%v), want git", out, err)
	}
	if strings.Contains(listing, "vendor-completions") || strings.Contains(listing, "/copyright") {
		t.Errorf("rpm has Debian's files:\n%s", listing)
	}

	o := newOverlay(t)
	data, err := os.ReadFile(rpm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.host("/tmp/sessiond.rpm"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// --nodeps: this Debian machine's rpm database knows none of its packages.
	o.must(t, "rpm", "-i", "--nodeps", "/tmp/sessiond.rpm")
	if out := o.must(t, "/usr/bin/sessiond", "version"); strings.TrimSpace(out) != "sessiond "+testVersion {
		t.Errorf("sessiond version: %q", out)
	}
	if !strings.Contains(o.must(t, "getent", "group", "sessiond"), "sessiond:") {
		t.Error("no sessiond group after the post-install scriptlet")
	}
	checkMCPStarts(t, o)
	checkHolderInstalled(t, o)
	if fi, err := os.Stat(o.host("/var/lib/sessiond")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("/var/lib/sessiond after install: %v, %v", fi, err)
	}
	files := strings.Fields(o.must(t, "rpm", "-ql", "sessiond"))
	o.must(t, "rpm", "-e", "--nodeps", "sessiond")
	// The package's own directories go with it, not only its files.
	for _, p := range append(files, "/var/lib/sessiond", "/run/sessiond", "/usr/libexec/sessiond", "/usr/share/doc/sessiond", "/usr/share/licenses/sessiond") {
		if _, err := os.Lstat(o.host(p)); err == nil {
			t.Errorf("%s is left after rpm -e", p)
		}
	}
}

// checkHolderInstalled runs the installed terminal holder and log keeper,
// which the daemon finds in /usr/libexec/sessiond (proc.Libexec): each
// runs, and says it is the daemon's to start.
func checkHolderInstalled(t *testing.T, o *overlay) {
	t.Helper()
	for prog, says := range map[string]string{
		"/usr/libexec/sessiond/sessiond-holder":    "the daemon starts it for a terminal session",
		"/usr/libexec/sessiond/sessiond-logkeeper": "the daemon starts it, as sessiond-logkeeper --socket PATH",
	} {
		out, err := o.run(t, prog, "--help")
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(out, says) {
			t.Errorf("%s --help: %v\n%s", prog, err, out)
		}
	}
}

// checkMCPStarts has the installed sessionctl answer an MCP client's
// initialize: `sessionctl mcp` finds its helper in /usr/libexec/sessiond.
func checkMCPStarts(t *testing.T, o *overlay) {
	t.Helper()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	// A client keeps stdin open while it waits for the answer.
	out := o.must(t, "sh", "-c", "(echo '"+initialize+"'; sleep 1) | /usr/bin/sessionctl mcp")
	if !strings.Contains(out, `"serverInfo":{"name":"sessiond"`) || !strings.Contains(out, testVersion) {
		t.Errorf("sessionctl mcp, installed, answered initialize with:\n%s", out)
	}
}
