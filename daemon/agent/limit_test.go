package agent

import (
	"testing"
	"time"
)

func TestClassifyMessage(t *testing.T) {
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 14, 30, 0, 0, chicago) // a Wednesday
	cases := []struct {
		msg    string
		class  string
		resets time.Time
		gaveUp bool
	}{
		{"Claude AI usage limit reached|1767225600", LimitQuota, time.Unix(1767225600, 0), false},
		{"Claude usage limit reached. Your limit will reset at 3pm (America/Chicago).", LimitQuota, time.Date(2026, 12, 2, 15, 0, 0, 0, chicago), false},
		{"5-hour limit reached ∙ resets 9am (America/Chicago)", LimitQuota, time.Date(2026, 12, 3, 9, 0, 0, 0, chicago), false},
		{"You've hit your weekly limit · resets Mon 12:00am (America/Chicago)", LimitQuota, time.Date(2026, 12, 7, 0, 0, 0, 0, chicago), false},
		{"You've hit your usage limit. Upgrade to Pro or try again in 2 days 17 hours 5 minutes.", LimitQuota, now.Add(65*time.Hour + 5*time.Minute), false},
		{"API Error: Rate limit reached", LimitThrottle, time.Time{}, false},
		{"stream disconnected: exceeded retry limit, last status: 429 Too Many Requests", LimitThrottle, time.Time{}, true},
		{"Credit balance is too low", LimitSpend, time.Time{}, false},
		{"Invalid API key · Please run /login", LimitAuth, time.Time{}, false},
	}
	for _, c := range cases {
		l, ok := ClassifyMessage(c.msg, now, chicago)
		if !ok || l.Class != c.class || !l.ResetsAt.Equal(c.resets) || l.GaveUp != c.gaveUp {
			t.Errorf("%q: got %+v ok=%v, want class %s resets %v gave up %v", c.msg, l, ok, c.class, c.resets, c.gaveUp)
		}
	}
	for _, msg := range []string{"", "All tests pass.", "I changed the rate limiter in limit.go", "error: file not found"} {
		if l, ok := ClassifyMessage(msg, now, chicago); ok {
			t.Errorf("%q is no limit, got %+v", msg, l)
		}
	}
}

func TestOutputLimit(t *testing.T) {
	now := time.Unix(1767200000, 0)
	cases := []struct {
		lines  []string
		class  string
		resets time.Time
	}{
		{[]string{`{"type":"system","subtype":"init"}`, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1767225600,"rateLimitType":"five_hour"}}`}, LimitQuota, time.Unix(1767225600, 0)},
		{[]string{`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1767225600"}`}, LimitQuota, time.Unix(1767225600, 0)},
		{[]string{`{"type":"error","message":"{\"error\":{\"type\":\"usage_limit_reached\",\"message\":\"The usage limit has been reached\",\"resets_in_seconds\":30}}"}`}, LimitQuota, now.Add(30 * time.Second)},
		{[]string{`{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}`}, LimitThrottle, time.Time{}},
		{[]string{"working...", "Claude AI usage limit reached|1767225600", ""}, LimitQuota, time.Unix(1767225600, 0)},
	}
	for i, c := range cases {
		l, ok := OutputLimit(c.lines, now)
		if !ok || l.Class != c.class || !l.ResetsAt.Equal(c.resets) {
			t.Errorf("case %d: got %+v ok=%v, want %s at %v", i, l, ok, c.class, c.resets)
		}
	}
	if l, ok := OutputLimit([]string{`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1767225600}}`, "done"}, now); ok {
		t.Errorf("a warning is no limit: got %+v", l)
	}
}

func TestClaudeStopFailure(t *testing.T) {
	p := []byte(`{"session_id":"0f4b3c52-6f0e-4a39-9d41-3f7d1b2a9c10","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"StopFailure","error":"rate_limit","error_details":"Claude AI usage limit reached|1767225600","last_assistant_message":""}`)
	ev, err := ClaudeCode.ParseHook(p, false)
	if err != nil || ev.Limit == nil || ev.Limit.Class != LimitQuota || !ev.Limit.ResetsAt.Equal(time.Unix(1767225600, 0)) || !ev.TurnEnded {
		t.Fatalf("got %+v %v", ev, err)
	}
	p = []byte(`{"session_id":"0f4b3c52-6f0e-4a39-9d41-3f7d1b2a9c10","hook_event_name":"StopFailure","error":"billing_error","error_details":"Your credit balance is too low"}`)
	if ev, err = ClaudeCode.ParseHook(p, true); err != nil || ev.Limit == nil || ev.Limit.Class != LimitSpend {
		t.Fatalf("billing: got %+v %v", ev, err)
	}
	p = []byte(`{"session_id":"0f4b3c52-6f0e-4a39-9d41-3f7d1b2a9c10","hook_event_name":"StopFailure","error":"rate_limit","error_details":"API Error: Rate limit reached"}`)
	if ev, err = ClaudeCode.ParseHook(p, true); err != nil || ev.Limit == nil || ev.Limit.Class != LimitThrottle || !ev.Limit.GaveUp {
		t.Fatalf("throttle: got %+v %v", ev, err)
	}
	// An API never reached (no network) is no limit: the turn failed.
	p = []byte(`{"session_id":"0f4b3c52-6f0e-4a39-9d41-3f7d1b2a9c10","hook_event_name":"StopFailure","error":"server_error","error_details":"API Error: Can't reach the API server (ENOTFOUND)"}`)
	if ev, err = ClaudeCode.ParseHook(p, false); err != nil || ev.Limit != nil || !ev.TurnEnded {
		t.Fatalf("no network: got %+v %v, want the turn ended and no limit", ev, err)
	}
	p = []byte(`{"session_id":"0f4b3c52-6f0e-4a39-9d41-3f7d1b2a9c10","hook_event_name":"StopFailure","error":"server_error","error_details":"API Error: 500 Internal server error"}`)
	if ev, err = ClaudeCode.ParseHook(p, false); err != nil || ev.Limit == nil || ev.Limit.Class != LimitThrottle {
		t.Fatalf("a server's error: got %+v %v, want a throttle", ev, err)
	}
}

func FuzzClassifyMessage(f *testing.F) {
	for _, s := range []string{"Claude AI usage limit reached|1767225600", "resets Mon 12:00am (America/Chicago)", "try again in 2 days 17 hours", "resets 13:99pm"} {
		f.Add(s)
	}
	now := time.Unix(1767200000, 0)
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := ClassifyMessage(s, now, time.UTC)
		if ok && l.Class == "" {
			t.Fatalf("a limit without a class: %+v", l)
		}
		_, _ = OutputLimit([]string{s}, now)
		_, _ = jsonLimit([]byte(s), now)
	})
}
