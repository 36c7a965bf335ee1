// Command release builds sessiond's release artifacts (`make package`):
// .deb and .rpm for linux amd64 and arm64, tarballs for those and darwin
// arm64, and SHA256SUMS, into -dist.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/sessiond/sessiond/packaging/release"
)

func main() {
	var o release.Options
	var targets, formats string
	flag.StringVar(&o.Root, "root", ".", "the repository")
	flag.StringVar(&o.Dist, "dist", "dist", "where the artifacts go (emptied first)")
	flag.StringVar(&o.Version, "version", "", "the version, as git describe prints it")
	flag.StringVar(&o.Maintainer, "maintainer", "", "the packages' maintainer, \"Name <address>\"")
	flag.StringVar(&targets, "targets", "", "comma-separated OS/ARCH list (default: linux/amd64,linux/arm64,darwin/arm64)")
	flag.StringVar(&formats, "formats", "", "comma-separated deb, rpm, tar.gz (default: all)")
	flag.Parse()
	for _, t := range split(targets) {
		goos, arch, ok := strings.Cut(t, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "release: target %q: want OS/ARCH\n", t)
			os.Exit(2)
		}
		o.Targets = append(o.Targets, release.Target{OS: goos, Arch: arch})
	}
	o.Formats = split(formats)
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	artifacts, err := release.Build(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, a := range artifacts {
		fmt.Println(a)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
