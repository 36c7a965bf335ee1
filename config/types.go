package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Duration is a time.Duration written as text ("30s", "4h", "1h30m") in
// TOML and JSON. An empty string or "off" is zero.
type Duration struct {
	time.Duration
}

// ParseDuration parses a duration as written in configuration.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" || s == "0" {
		return Duration{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("invalid duration %q (use e.g. 30s, 5m, 4h)", s)
	}
	return Duration{d}, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) {
	if d.Duration == 0 {
		return []byte(""), nil
	}
	return []byte(d.String()), nil
}

// Size is a byte count written as text ("10MiB", "512KiB", "1GB", "4096").
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseSize parses a byte count as written in configuration.
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	num := s
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q (use e.g. 4096, 512KiB, 10MiB)", s)
	}
	return Size(n * mult), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (z *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*z = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (z Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(z) >= u.mult && int64(z)%u.mult == 0 {
			return []byte(strconv.FormatInt(int64(z)/u.mult, 10) + u.suffix), nil
		}
	}
	return []byte(strconv.FormatInt(int64(z), 10)), nil
}

// Signal is a signal written by name ("SIGTERM", "TERM", "usr1") or number.
// The zero value means no signal.
type Signal struct {
	Num  unix.Signal
	Name string
}

// CheckWarnSignal says why sig cannot be a warning's signal: one no
// process can catch (SIGKILL, SIGSTOP) would end or freeze the session,
// and a warning never does.
func CheckWarnSignal(sig Signal) error {
	if sig.Num == unix.SIGKILL || sig.Num == unix.SIGSTOP {
		return fmt.Errorf("%s cannot be caught: a warning must never end or freeze the session; give one the agent catches (such as SIGUSR1), or none", sig.Name)
	}
	return nil
}

// ParseSignal parses a signal name or number. An empty string is no signal.
func ParseSignal(s string) (Signal, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Signal{}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 || unix.SignalName(unix.Signal(n)) == "" {
			return Signal{}, fmt.Errorf("unknown signal number %d", n)
		}
		return Signal{unix.Signal(n), unix.SignalName(unix.Signal(n))}, nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	n := unix.SignalNum(name)
	if n == 0 {
		return Signal{}, fmt.Errorf("unknown signal %q (use a name such as SIGTERM, SIGINT, SIGUSR1, or a number)", s)
	}
	return Signal{n, name}, nil
}

// String returns the signal's name, or "" for no signal.
func (g Signal) String() string { return g.Name }

// UnmarshalText implements encoding.TextUnmarshaler.
func (g *Signal) UnmarshalText(b []byte) error {
	v, err := ParseSignal(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (g Signal) MarshalText() ([]byte, error) { return []byte(g.Name), nil }
