package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ForegroundGroup returns the foreground process group of pid's controlling
// terminal (the tpgid of /proc/PID/stat), or 0 when pid has no terminal or
// is gone. A shell on a terminal runs its jobs in groups of their own, and
// the one in the foreground is the one a person's ctrl-C would reach.
func ForegroundGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	// After the command name: state ppid pgrp session tty_nr tpgid.
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 6 {
		return 0
	}
	tpgid, err := strconv.Atoi(f[5])
	if err != nil || tpgid <= 1 {
		return 0
	}
	return tpgid
}
