// Package configfile reads sessiond's configuration from TOML: the daemon
// config (over the defaults embedded in the binary) and a project's
// sessiond.toml (over the daemon's [defaults]). Unknown keys and bad values
// are rejected with the file, line and key (*Error), so a typo never
// silently turns into a default; checkpoint schedules are parsed with
// robfig/cron behind a recover, as its parser can panic on odd input.
package configfile
