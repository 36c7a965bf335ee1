package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Limit modes: what a session does with a limit its host cannot apply.
const (
	// LimitsStrict refuses to start the session (the default).
	LimitsStrict = "strict"
	// LimitsBestEffort starts it with what the host can apply, and says
	// what it could not.
	LimitsBestEffort = "best-effort"
)

// Limits bound what a session's processes may take together, through the
// session's cgroup; zero is no bound.
type Limits struct {
	// MemoryMax is the hard bound: beyond it the kernel's OOM killer ends
	// a process of the session (memory.max).
	MemoryMax Size `toml:"memory_max" json:"memory_max,omitempty"`
	// MemoryHigh throttles the session and warns it (memory.high).
	MemoryHigh Size `toml:"memory_high" json:"memory_high,omitempty"`
	// PidsMax bounds the number of processes and threads (pids.max).
	PidsMax int64 `toml:"pids_max" json:"pids_max,omitempty"`
	// CPUWeight is the session's share of the CPU against others, 1 to
	// 10000 (cpu.weight, 100 for every process by default).
	CPUWeight int64 `toml:"cpu_weight" json:"cpu_weight,omitempty"`
	// CPUMax bounds the CPU time, as a percentage of one CPU ("150%" is
	// one and a half); "" or "max" is no bound (cpu.max).
	CPUMax string `toml:"cpu_max" json:"cpu_max,omitempty"`
	// Mode is LimitsStrict or LimitsBestEffort ("" is strict).
	Mode string `toml:"limits" json:"limits,omitempty"`
}

// Any reports whether l bounds anything.
func (l Limits) Any() bool {
	return l.MemoryMax > 0 || l.MemoryHigh > 0 || l.PidsMax > 0 || l.CPUWeight > 0 || l.CPUPercent() > 0
}

// BestEffort reports whether a limit the host cannot apply is left out
// rather than refused.
func (l Limits) BestEffort() bool { return l.Mode == LimitsBestEffort }

// CPUPercent is CPUMax as a percentage of one CPU, 0 for no bound. It
// assumes Validate passed.
func (l Limits) CPUPercent() float64 {
	p, _ := ParseCPUMax(l.CPUMax)
	return p
}

// ParseCPUMax parses a cpu_max value: "N%" of one CPU (N > 0, fractions
// allowed), or "" or "max" for no bound (0).
func ParseCPUMax(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "max" {
		return 0, nil
	}
	num, ok := strings.CutSuffix(s, "%")
	p, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || p <= 0 || p != p || p > 1e6 {
		return 0, fmt.Errorf("%q is not a share of CPU time: give a percentage of one CPU such as 50%% or 200%%, or max", s)
	}
	return p, nil
}

// Validate reports the first thing wrong with l as a *FieldError.
func (l Limits) Validate() error {
	const minMemory = 1 << 20
	for _, m := range []struct {
		key string
		v   Size
	}{{"memory_max", l.MemoryMax}, {"memory_high", l.MemoryHigh}} {
		if m.v < 0 {
			return &FieldError{m.key, "must not be negative"}
		}
		if m.v > 0 && m.v < minMemory {
			return &FieldError{m.key, fmt.Sprintf("%d bytes is too little for any command to start; give at least 1M (e.g. 512M, 2G)", m.v)}
		}
	}
	if l.MemoryMax > 0 && l.MemoryHigh > l.MemoryMax {
		return &FieldError{"memory_high", fmt.Sprintf("%s is above memory_max %s: the warning would never come before the kill", SizeText(l.MemoryHigh), SizeText(l.MemoryMax))}
	}
	if l.PidsMax < 0 {
		return &FieldError{"pids_max", fmt.Sprintf("must not be negative, got %d", l.PidsMax)}
	}
	if l.PidsMax > 0 && l.PidsMax < 2 {
		return &FieldError{"pids_max", fmt.Sprintf("%d is too few for a command to start; give at least 2", l.PidsMax)}
	}
	if l.CPUWeight < 0 || l.CPUWeight > 10000 {
		return &FieldError{"cpu_weight", fmt.Sprintf("must be between 1 and 10000 (100 is every process's default), got %d", l.CPUWeight)}
	}
	if _, err := ParseCPUMax(l.CPUMax); err != nil {
		return &FieldError{"cpu_max", err.Error()}
	}
	switch l.Mode {
	case "", LimitsStrict, LimitsBestEffort:
	default:
		return &FieldError{"limits", fmt.Sprintf("%q is not one of strict, best-effort", l.Mode)}
	}
	return nil
}

// SizeText is z as configuration writes it (512MiB, 2GiB, 4096).
func SizeText(z Size) string {
	b, _ := z.MarshalText()
	return string(b)
}
