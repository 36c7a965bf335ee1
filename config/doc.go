// Package config holds sessiond's settings: the daemon configuration, the
// session spec that says what to run and how, the defaults embedded in the
// binary, and the default paths for user and root mode.
//
// Configuration is TOML. Unknown keys and bad values are rejected with the
// file, line and key, so a typo never silently turns into a default. The
// precedence for a session's spec is: daemon [defaults] < the project's
// sessiond.toml < flags given to sessionctl start. The package imports
// nothing else of sessiond's, so every other package may use it.
package config
