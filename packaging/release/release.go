package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Formats of the artifacts.
const (
	Deb     = "deb"
	RPM     = "rpm"
	Tarball = "tar.gz"
)

// Target is a platform to build for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// Targets are the platforms of a release: the packages are for Linux
// only, the tarballs for all three.
var Targets = []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}}

// Options says what to build and where.
type Options struct {
	Root       string    // the repository: its cmd/, docs/, README.md, LICENSE
	Dist       string    // where the artifacts go; emptied first
	Version    string    // as `git describe --tags --always --dirty` prints it
	Maintainer string    // "Name <address>" for the packages' Maintainer/Packager
	Targets    []Target  // default: Targets
	Formats    []string  // default: Deb, RPM, Tarball
	Go         string    // the go command; default "go"
	Log        io.Writer // progress, one line per step; default none
}

// Build makes the artifacts and SHA256SUMS, and returns their paths.
func Build(ctx context.Context, o Options) ([]string, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "sessiond-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	mtime, err := o.sourceTime(ctx)
	if err != nil {
		return nil, err
	}
	b := &builder{Options: o, work: work, mtime: mtime, start: time.Now()}

	if err := os.RemoveAll(o.Dist); err != nil {
		return nil, fmt.Errorf("empty %s: %w", o.Dist, err)
	}
	if err := os.MkdirAll(o.Dist, 0o755); err != nil {
		return nil, err
	}
	bins := map[Target]string{}
	for _, t := range o.Targets {
		if bins[t], err = b.compile(ctx, t); err != nil {
			return nil, err
		}
	}
	host := Target{runtime.GOOS, runtime.GOARCH}
	hostBin, ok := bins[host]
	if !ok {
		if hostBin, err = b.compile(ctx, host); err != nil {
			return nil, err
		}
	}
	if err := b.generate(ctx, hostBin); err != nil {
		return nil, err
	}

	// Compression takes most of the time, one core each: one artifact per
	// core at a time.
	type job struct {
		t      Target
		format string
		path   string
		err    error
	}
	var jobs []*job
	for _, t := range o.Targets {
		for _, format := range o.Formats {
			if format == Tarball || t.OS == "linux" {
				jobs = append(jobs, &job{t: t, format: format})
			}
		}
	}
	slots := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			b.logf("%s for %s", j.format, j.t)
			if j.format == Tarball {
				j.path, j.err = b.tarball(j.t, bins[j.t])
			} else {
				j.path, j.err = b.nfpm(ctx, j.t, bins[j.t], j.format)
			}
			if j.err != nil {
				j.err = fmt.Errorf("%s for %s: %w", j.format, j.t, j.err)
			}
		}()
	}
	wg.Wait()
	var artifacts []string
	var errs []error
	for _, j := range jobs {
		artifacts = append(artifacts, j.path)
		errs = append(errs, j.err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b.logf("done")
	sums, err := writeSums(o.Dist, artifacts)
	if err != nil {
		return nil, err
	}
	return append(artifacts, sums), nil
}

func (o *Options) defaults() error {
	if o.Root == "" || o.Dist == "" || o.Version == "" {
		return errors.New("release: Root, Dist and Version are required")
	}
	var err error
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		return err
	}
	if o.Dist, err = filepath.Abs(o.Dist); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.Root, "go.mod")); err != nil {
		return fmt.Errorf("release: %s is not the repository: %w", o.Root, err)
	}
	if o.Dist == o.Root || strings.HasPrefix(o.Root, o.Dist+string(filepath.Separator)) {
		return fmt.Errorf("release: the output directory %s would hold the repository", o.Dist)
	}
	if o.Maintainer == "" {
		o.Maintainer = "sessiond maintainers <maintainers@sessiond.invalid>"
	}
	if len(o.Targets) == 0 {
		o.Targets = Targets
	}
	if len(o.Formats) == 0 {
		o.Formats = []string{Deb, RPM, Tarball}
	}
	for _, f := range o.Formats {
		if !slices.Contains([]string{Deb, RPM, Tarball}, f) {
			return fmt.Errorf("release: unknown format %q (want deb, rpm or tar.gz)", f)
		}
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// sourceTime is the time stamped on every file of the artifacts, so that
// the same commit builds the same bytes: $SOURCE_DATE_EPOCH, else the time
// of the last commit.
func (o *Options) sourceTime(ctx context.Context) (time.Time, error) {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", v, err)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	out, err := exec.CommandContext(ctx, "git", "-C", o.Root, "log", "-1", "--format=%ct").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("time of the last commit (set SOURCE_DATE_EPOCH outside a git checkout): %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time of the last commit: %q: %w", out, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

type builder struct {
	Options
	work  string
	mtime time.Time
	start time.Time
	gen   generated
	logMu sync.Mutex
}

func (b *builder) logf(format string, args ...any) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	fmt.Fprintf(b.Log, "%6.1fs  %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// compile builds the programs and their helpers (sessiond-holder, sessionctl's) for t, static, -trimpath, the version
// stamped, and returns their directory.
func (b *builder) compile(ctx context.Context, t Target) (string, error) {
	dir := filepath.Join(b.work, "bin", t.OS+"-"+t.Arch)
	b.logf("build %s", t)
	cmd := exec.CommandContext(ctx, b.Go, "build", "-trimpath", "-tags", "sessionctl_helpers", "-ldflags", "-s -w -X main.version="+b.Version,
		"-o", dir+string(filepath.Separator), "./cmd/sessiond", "./cmd/sessiond/libexec/...", "./cmd/sessionctl", "./cmd/sessionctl/libexec/...")
	cmd.Dir = b.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build for %s: %w\n%s", t, err, out)
	}
	return dir, nil
}

// run runs a program and returns its standard output.
func (b *builder) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(b.mtime.Unix(), 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// writeSums writes SHA256SUMS in dir, as sha256sum -c reads it.
func writeSums(dir string, files []string) (string, error) {
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(f))
	}
	path := filepath.Join(dir, "SHA256SUMS")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
