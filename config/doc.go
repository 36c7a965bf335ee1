// Package config holds sessiond's settings as types: the daemon
// configuration, the session spec that says what to run and how, their
// validation, and the default paths for user and root mode.
//
// Reading them from TOML — the embedded defaults, line-numbered errors,
// unknown keys rejected, cron schedules — is package configfile's job, so
// that programs that only need the types and paths (sessionctl, the wire
// types of package ipc) link no TOML or cron code. The precedence for a
// session's spec is: daemon [defaults] < the project's sessiond.toml <
// flags given to sessionctl start. The package imports nothing else of
// sessiond's, so every other package may use it.
package config
