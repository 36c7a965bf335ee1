package session

import (
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
)

func TestRestartDecision(t *testing.T) {
	spec := func(policy string) config.Spec {
		return config.Spec{Restart: policy, MaxRestarts: 3, RestartWindow: config.Duration{Duration: 10 * time.Minute}}
	}
	recent := []time.Time{t0.Add(-5 * time.Minute), t0.Add(-3 * time.Minute)}
	old := []time.Time{t0.Add(-time.Hour), t0.Add(-50 * time.Minute), t0.Add(-40 * time.Minute)}
	tests := []struct {
		name      string
		spec      config.Spec
		reason    Reason
		exitKnown bool
		history   []time.Time
		yes       bool
		delay     time.Duration
		limited   bool
	}{
		{"no policy", spec(config.RestartNo), Error, true, nil, false, 0, false},
		{"on-failure after an error", spec(config.RestartOnFailure), Error, true, nil, true, time.Second, false},
		{"on-failure after a crash", spec(config.RestartOnFailure), Crashed, false, nil, true, time.Second, false},
		{"on-failure after a completion", spec(config.RestartOnFailure), Complete, true, nil, false, 0, false},
		{"on-failure after a timeout", spec(config.RestartOnFailure), Timeout, true, nil, false, 0, false},
		{"on-failure, exit status unknown", spec(config.RestartOnFailure), Error, false, nil, false, 0, false},
		{"always after a completion", spec(config.RestartAlways), Complete, true, nil, true, time.Second, false},
		{"always after a timeout", spec(config.RestartAlways), Timeout, true, nil, true, time.Second, false},
		{"never after a stop", spec(config.RestartAlways), Interrupted, true, nil, false, 0, false},
		{"backoff doubles within the window", spec(config.RestartAlways), Error, true, recent, true, 4 * time.Second, false},
		{"restarts outside the window do not count", spec(config.RestartAlways), Error, true, old, true, time.Second, false},
		{"max_restarts reached", spec(config.RestartAlways), Error, true, append(recent, t0.Add(-time.Minute)), false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := RestartDecision(tt.spec, tt.reason, tt.exitKnown, tt.history, t0)
			if d.Yes != tt.yes || d.Delay != tt.delay || d.Limited != tt.limited {
				t.Errorf("decision = %+v, want yes %v delay %v limited %v", d, tt.yes, tt.delay, tt.limited)
			}
			if d.Yes && (len(d.History) == 0 || !d.History[len(d.History)-1].Equal(t0)) {
				t.Errorf("history = %v, want it to end with now", d.History)
			}
		})
	}
}

func TestRestartDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 50: time.Minute} {
		if got := restartDelay(n); got != want {
			t.Errorf("restartDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestEveryReasonHasAPolicy(t *testing.T) {
	for _, r := range []Reason{Complete, Error, Timeout, Idle, Interrupted, Crashed, Waiting, Budget} {
		if !r.Valid() || r.policy().Status == "" {
			t.Errorf("reason %s has no policy", r)
		}
	}
	if Reason("bogus").Valid() {
		t.Error("an unknown reason is valid")
	}
}

// TestWarningsAreOfEndReasons: a handoff warning is only ever given for an
// end reason of ipc.Ends, the one table of them.
func TestWarningsAreOfEndReasons(t *testing.T) {
	for r := range warnings {
		if !r.Valid() {
			t.Errorf("a warning for %q, which is no end reason of ipc.Ends", r)
		}
	}
}
