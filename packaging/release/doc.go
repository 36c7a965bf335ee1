// Package release builds sessiond's release artifacts into a directory:
// .deb and .rpm packages (made by nfpm) and tarballs, each holding both
// programs, the systemd units rendered for where they are installed, the
// sysusers.d and tmpfiles.d snippets, the default config, shell
// completions, man pages, the documentation and the licence; and
// SHA256SUMS over them all. `make package` runs it through
// packaging/cmd/release.
//
// nfpm runs as its own pinned command (`go run ...nfpm@NFPMVersion`), so
// that the packager's dependencies (go-git, openpgp, sprig, ...) stay out
// of this module, which ships none of them. Its config is written as JSON,
// which nfpm's YAML reader takes as it is.
package release
