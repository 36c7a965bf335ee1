// Package packaging holds sessiond's service definitions and renders them:
// the systemd units (system and user) and the launchd job that
// `sessiond install` hands to kardianos/service in place of its built-in
// templates, and that the release packages ship ready-made for
// /usr/bin/sessiond. It also reads back the command line of a rendered
// definition, for `sessiond status`.
package packaging
