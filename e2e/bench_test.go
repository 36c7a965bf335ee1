package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// event is one line of sessionctl events -f --json.
type event struct {
	Type      string          `json:"type"`
	Time      time.Time       `json:"time"`
	SessionID string          `json:"session_id"`
	Data      json.RawMessage `json:"data"`
}

// BenchmarkDeadlineAccuracy starts sessions concurrently with a 2s timeout
// and a warning 1s before it, and measures from the event stream how late
// the warning, the stop and the recorded end come after the warn_at and
// deadline in each session's record.
func BenchmarkDeadlineAccuracy(b *testing.B) {
	const n = 20
	d := startDaemon(b)
	var warnLate, stopLate, endLate []float64
	for b.Loop() {
		w, l, e := deadlineRound(b, d, n)
		warnLate = append(warnLate, w...)
		stopLate = append(stopLate, l...)
		endLate = append(endLate, e...)
	}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"warn", warnLate}, {"stop", stopLate}, {"end", endLate}} {
		b.ReportMetric(percentile(m.v, 50), m.name+"-p50-ms")
		b.ReportMetric(percentile(m.v, 99), m.name+"-p99-ms")
	}
}

// deadlineRound runs n sessions to their deadline and returns, in ms, how
// late each one's warned, stopping and ended events came.
func deadlineRound(b *testing.B, d *daemon, n int) (warn, stop, end []float64) {
	b.Helper()
	ev := exec.Command(sessionctlBin, "--socket", d.sock, "events", "-f", "--json")
	ev.Env = cleanEnv()
	out, err := ev.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := ev.Start(); err != nil {
		b.Fatal(err)
	}
	lines := make(chan event, 16*n)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				lines <- e
			}
		}
	}()
	defer func() {
		_ = ev.Process.Kill()
		for range lines {
		}
		<-readDone
		_ = ev.Wait()
	}()
	// The stream has no history: prove it is subscribed with a probe
	// session whose end must come through it before the measured ones start.
	probe := strings.TrimSpace(d.mustCtl("start", "-q", project(b), "--", "true"))
	probeTimeout := time.After(10 * time.Second)
	for probed := false; !probed; {
		select {
		case e, ok := <-lines:
			if !ok {
				b.Fatalf("event stream closed before the probe session ended")
			}
			probed = e.SessionID == probe && e.Type == "ended"
		case <-probeTimeout:
			b.Fatalf("the probe session's end did not come through the event stream within 10s")
		}
	}

	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dir := project(b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(sessionctlBin, "--socket", d.sock, "start", "-q", dir,
				"--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s", "--checkpoint", "", "--", "sleep", "1000")
			cmd.Env = cleanEnv()
			o, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("start: %v: %s", err, o)
				return
			}
			ids[i] = strings.TrimSpace(string(o))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}

	warnedAt := map[string]time.Time{}
	stoppingAt := map[string]time.Time{}
	ended := map[string]record{}
	endedAt := map[string]time.Time{}
	timeout := time.After(30 * time.Second)
	for len(ended) < n {
		select {
		case e, ok := <-lines:
			if !ok {
				b.Fatalf("event stream closed with %d of %d sessions ended", len(ended), n)
			}
			if !slices.Contains(ids, e.SessionID) {
				continue
			}
			switch e.Type {
			case "warned":
				warnedAt[e.SessionID] = e.Time
			case "stopping":
				stoppingAt[e.SessionID] = e.Time
			case "ended":
				var rec record
				if err := json.Unmarshal(e.Data, &rec); err != nil {
					b.Fatalf("ended event data: %v", err)
				}
				ended[e.SessionID] = rec
				endedAt[e.SessionID] = e.Time
			}
		case <-timeout:
			b.Fatalf("only %d of %d sessions ended within 30s", len(ended), n)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, id := range ids {
		rec := ended[id]
		if rec.EndReason != "timeout" {
			b.Errorf("session %s ended %s, want timeout", id, rec.EndReason)
		}
		w, ok1 := warnedAt[id]
		s, ok2 := stoppingAt[id]
		if !ok1 || !ok2 {
			b.Fatalf("session %s: warned event %v, stopping event %v", id, ok1, ok2)
		}
		warn = append(warn, ms(w.Sub(rec.WarnAt)))
		stop = append(stop, ms(s.Sub(rec.Deadline)))
		end = append(end, ms(endedAt[id].Sub(rec.Deadline)))
	}
	return warn, stop, end
}

// percentile returns the p-th percentile of v by nearest rank.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
