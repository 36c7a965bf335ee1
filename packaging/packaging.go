// Package packaging holds sessiond's service definitions: the systemd unit
// templates that sessiond install hands to kardianos/service (through its
// SystemdScript option, in place of its built-in template).
package packaging

import _ "embed"

// SystemUnit is the template of the system unit (/etc/systemd/system).
//
//go:embed systemd/sessiond.service
var SystemUnit string

// UserUnit is the template of the user unit (~/.config/systemd/user).
//
//go:embed systemd/sessiond-user.service
var UserUnit string
