package ipc

import (
	"fmt"
	"testing"
	"time"
)

// ShortDuration, without fmt, says what the fmt formulation said.
func TestShortDurationAsFmt(t *testing.T) {
	old := func(d time.Duration) string {
		if d < 0 {
			d = 0
		}
		switch {
		case d < time.Minute:
			return fmt.Sprintf("%ds", int(d.Seconds()))
		case d < time.Hour:
			return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
		case d < 48*time.Hour:
			return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
		}
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	for d := -time.Minute; d < 100*time.Hour; d += 37*time.Second + 123*time.Millisecond {
		if got, want := ShortDuration(d), old(d); got != want {
			t.Fatalf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
