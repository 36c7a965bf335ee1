package agent

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	// The zones a limit's message names (resets 9am (America/Chicago))
	// are read right on hosts without a zone database (containers).
	_ "time/tzdata"
)

// Limit is a usage limit an agent reports or says it hit: its class
// (ipc.LimitQuota, LimitThrottle, LimitSpend, LimitAuth), when it resets
// (zero: not said), and the agent's words.
type Limit struct {
	Class    string    `json:"class"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
	Message  string    `json:"message,omitempty"`
	// GaveUp: the agent stopped retrying a transient refusal (Codex's
	// "exceeded retry limit"); a throttle it still retries is no limit.
	GaveUp bool `json:"gave_up,omitempty"`
}

// Limit classes, as ipc says them.
const (
	LimitQuota    = "quota"
	LimitThrottle = "throttle"
	LimitSpend    = "spend"
	LimitAuth     = "auth"
)

// The messages agents print at a limit (Claude Code 2.1, Codex 0.169),
// most telling first. Each names its class; the reset is read from the
// message where it says one. The expressions are compiled at their first
// use: every sessiond process (the terminal holders among them) links this
// package, and few ever read a limit.
var (
	// "Claude AI usage limit reached|1767225600" (an epoch in seconds).
	limitEpoch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)usage limit reached\|(\d{9,11})`) })
	// "Your limit will reset at 3pm (America/Chicago)", "resets 3:45pm",
	// "resets Mon 12:00am", "5-hour limit reached ∙ resets 9am".
	limitClock = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)resets?(?: at)? (?:(mon|tue|wed|thu|fri|sat|sun)[a-z]* )?(\d{1,2})(?::(\d{2}))? ?(am|pm)(?: \(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?`)
	})
	// Codex: "try again in 2 days 17 hours 5 minutes", "in 3h 10m".
	limitIn = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:try again|resets?|available again) in ((?:\d+ ?(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)[ ,]*(?:and )?)+)`)
	})
	limitPart = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(\d+) ?(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	})
)

// limitWords are what each class's messages say, lower-cased.
var limitWords = []struct {
	class string
	words []string
}{
	{LimitQuota, []string{"usage limit reached", "hit your usage limit", "hit your session limit", "hit your weekly limit",
		"hit your opus limit", "hit your limit", "limit reached ∙ resets", "limit reached · resets", "5-hour limit", "weekly limit reached",
		"usage_limit_reached", "quota exceeded", "out of usage"}},
	{LimitSpend, []string{"credit balance is too low", "billing_error", "insufficient_quota", "spend limit", "exceeded your current quota",
		"purchase more credits", "usage credits", "payment required"}},
	{LimitAuth, []string{"invalid api key", "authentication_failed", "authentication_error", "please run /login", "oauth token has expired",
		"not logged in", "401 unauthorized", "invalid x-api-key", "token has been revoked"}},
	{LimitThrottle, []string{"rate limit reached", "rate_limit_error", "rate limit exceeded", "request rejected (429)", "429 too many requests",
		"exceeded retry limit", "overloaded", "529 overloaded", "temporarily limiting requests", "too many requests"}},
}

// ClassifyMessage reads what an agent printed or recorded at a refusal of
// its API: the class of limit it says, and its reset where it gives one
// (a time of day is its next coming after now, in the zone it names, else
// in loc). ok is false for a message that tells of no limit.
func ClassifyMessage(msg string, now time.Time, loc *time.Location) (Limit, bool) {
	low := strings.ToLower(msg)
	var l Limit
	for _, c := range limitWords {
		for _, w := range c.words {
			if strings.Contains(low, w) {
				l.Class = c.class
				break
			}
		}
		if l.Class != "" {
			break
		}
	}
	if l.Class == "" {
		return Limit{}, false
	}
	l.Message = firstLine(msg)
	if l.Class == LimitThrottle && strings.Contains(low, "exceeded retry limit") {
		l.GaveUp = true
	}
	if at, ok := resetIn(msg, now, loc); ok {
		l.ResetsAt = at
		if l.Class == LimitThrottle && !l.GaveUp {
			// A throttle with a time to wait is a quota in all but name.
			l.Class = LimitQuota
		}
	}
	return l, true
}

// resetIn reads a reset time from a message: an epoch, a time of day, or
// a time from now.
func resetIn(msg string, now time.Time, loc *time.Location) (time.Time, bool) {
	if m := limitEpoch().FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(n, 0), true
		}
	}
	if m := limitIn().FindStringSubmatch(msg); m != nil {
		var d time.Duration
		for _, p := range limitPart().FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			if n > 1e6 {
				continue
			}
			switch u := strings.ToLower(p[2]); {
			case strings.HasPrefix(u, "d"):
				d += time.Duration(n) * 24 * time.Hour
			case strings.HasPrefix(u, "h"):
				d += time.Duration(n) * time.Hour
			case strings.HasPrefix(u, "m"):
				d += time.Duration(n) * time.Minute
			default:
				d += time.Duration(n) * time.Second
			}
		}
		if d > 0 {
			return now.Add(d), true
		}
	}
	if m := limitClock().FindStringSubmatch(msg); m != nil {
		return nextClock(m, now, loc)
	}
	return time.Time{}, false
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// nextClock is the next time after now at the hour a limitClock match
// gives, on its weekday if it names one.
func nextClock(m []string, now time.Time, loc *time.Location) (time.Time, bool) {
	hour, _ := strconv.Atoi(m[2])
	minute := 0
	if m[3] != "" {
		minute, _ = strconv.Atoi(m[3])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if strings.EqualFold(m[4], "pm") {
		hour += 12
	}
	if loc == nil {
		loc = time.Local
	}
	if m[5] != "" {
		if z, err := time.LoadLocation(m[5]); err == nil {
			loc = z
		}
	}
	t := now.In(loc)
	at := time.Date(t.Year(), t.Month(), t.Day(), hour, minute, 0, 0, loc)
	if m[1] != "" {
		wd := weekdays[strings.ToLower(m[1][:3])]
		at = at.AddDate(0, 0, (int(wd)-int(at.Weekday())+7)%7)
		if !at.After(now) {
			at = at.AddDate(0, 0, 7)
		}
		return at, true
	}
	if !at.After(now) {
		at = at.AddDate(0, 0, 1)
	}
	return at, true
}

// claudeStopFailure classes Claude Code's StopFailure hook: its error
// (rate_limit, billing_error, overloaded, authentication_failed, ...) and
// error_details, which carry the message and so the reset.
func claudeStopFailure(errName, details, last string, now time.Time) (Limit, bool) {
	text := strings.TrimSpace(details + "\n" + last)
	l, ok := ClassifyMessage(text, now, nil)
	switch errName {
	case "rate_limit":
		if !ok || l.Class == LimitThrottle && l.ResetsAt.IsZero() {
			// The turn failed at a rate limit after the agent's own
			// retries: it gave up.
			l.Class, l.GaveUp = LimitThrottle, true
		}
	case "billing_error":
		l.Class = LimitSpend
	case "authentication_failed":
		l.Class = LimitAuth
	case "overloaded", "server_error":
		if errName == "server_error" && !ok && unreachable(text) {
			// The API was never reached (no network, DNS): no refusal of
			// the account's, so no limit to wait out; the turn failed.
			return Limit{}, false
		}
		l.Class, l.GaveUp = LimitThrottle, true
	default:
		if !ok {
			return Limit{}, false
		}
	}
	if l.Message == "" {
		l.Message = firstLine(text)
		if l.Message == "" {
			l.Message = errName
		}
	}
	return l, true
}

// unreachable reports whether an agent's error says its API was never
// reached: a network or name failure, not an answer of the API's.
func unreachable(text string) bool {
	low := strings.ToLower(text)
	for _, w := range []string{"can't reach", "cannot reach", "connection_failed", "enotfound", "eai_again", "econnrefused",
		"econnreset", "etimedout", "fetch failed", "connection error", "socket hang up", "network is unreachable"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// OutputLimit looks for a limit in the last lines of a headless agent's
// output, newest first: Claude Code's stream-json rate_limit_event
// (status rejected, resetsAt) and result records, Codex's --json error
// events (usage_limit_reached, resets_in_seconds), then the messages.
func OutputLimit(lines []string, now time.Time) (Limit, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" {
			continue
		}
		if line[0] == '{' {
			if l, ok := jsonLimit([]byte(line), now); ok {
				return l, true
			}
			continue
		}
		if l, ok := ClassifyMessage(line, now, nil); ok {
			return l, true
		}
	}
	return Limit{}, false
}

// jsonLimit reads one JSON line of an agent's output for a limit.
func jsonLimit(b []byte, now time.Time) (Limit, bool) {
	if !bytes.Contains(b, []byte("limit")) && !bytes.Contains(b, []byte("429")) && !bytes.Contains(b, []byte("error")) {
		return Limit{}, false
	}
	var v struct {
		Type          string          `json:"type"`
		Subtype       string          `json:"subtype"`
		IsError       bool            `json:"is_error"`
		Result        string          `json:"result"`
		Message       json.RawMessage `json:"message"`
		Error         json.RawMessage `json:"error"`
		RateLimitInfo *struct {
			Status        string  `json:"status"`
			ResetsAt      float64 `json:"resetsAt"`
			RateLimitType string  `json:"rateLimitType"`
		} `json:"rate_limit_info"`
		Msg *codexError `json:"msg"`
	}
	if json.Unmarshal(b, &v) != nil {
		return Limit{}, false
	}
	if r := v.RateLimitInfo; v.Type == "rate_limit_event" && r != nil {
		if r.Status != "rejected" {
			return Limit{}, false
		}
		l := Limit{Class: LimitQuota, Message: "rate limit rejected: " + r.RateLimitType}
		if r.ResetsAt > 0 && r.ResetsAt < 1e11 {
			l.ResetsAt = time.Unix(int64(r.ResetsAt), 0)
		}
		return l, true
	}
	if v.Type == "result" && v.IsError {
		return ClassifyMessage(v.Result, now, nil)
	}
	if e := codexErrorOf(v.Type, v.Message, v.Error, v.Msg); e != nil {
		return e.limit(now)
	}
	return Limit{}, false
}

// codexError is Codex's account of a failed request: in its --json
// events ({"type":"error","message":...}), its rollout's event_msg, and
// the API error it passes on ({"type":"usage_limit_reached",
// "resets_in_seconds":...}).
type codexError struct {
	Type            string  `json:"type"`
	Message         string  `json:"message"`
	ResetsInSeconds float64 `json:"resets_in_seconds"`
	ResetsAt        float64 `json:"resets_at"`
	PlanType        string  `json:"plan_type"`
	Error           *struct {
		Type            string  `json:"type"`
		Message         string  `json:"message"`
		ResetsInSeconds float64 `json:"resets_in_seconds"`
		ResetsAt        float64 `json:"resets_at"`
	} `json:"error"`
}

// codexErrorOf finds the error of a Codex event in its shapes.
func codexErrorOf(typ string, message, errRaw json.RawMessage, msg *codexError) *codexError {
	if msg != nil && (msg.Type == "error" || msg.Type == "stream_error" || msg.Type == "usage_limit_reached") {
		return msg
	}
	var e codexError
	if len(errRaw) > 0 && errRaw[0] == '{' && json.Unmarshal(errRaw, &e) == nil {
		return &e
	}
	if typ == "error" || typ == "turn.failed" || typ == "stream_error" {
		e = codexError{Type: typ}
		if len(message) > 0 && message[0] == '"' {
			_ = json.Unmarshal(message, &e.Message)
		}
		if len(errRaw) > 0 && errRaw[0] == '"' {
			_ = json.Unmarshal(errRaw, &e.Message)
		}
		return &e
	}
	return nil
}

// limit classes a Codex error.
func (e *codexError) limit(now time.Time) (Limit, bool) {
	typ, msg, in, at := e.Type, e.Message, e.ResetsInSeconds, e.ResetsAt
	if x := e.Error; x != nil {
		typ, in, at = x.Type, max(in, x.ResetsInSeconds), max(at, x.ResetsAt)
		if x.Message != "" {
			msg = x.Message
		}
	}
	if typ != "usage_limit_reached" && strings.HasPrefix(strings.TrimSpace(msg), "{") {
		// The API's own error body, passed on as the message.
		var inner codexError
		if json.Unmarshal([]byte(msg), &inner) == nil && (inner.Type != "" || inner.Error != nil) {
			return inner.limit(now)
		}
	}
	var l Limit
	ok := false
	if typ == "usage_limit_reached" {
		l, ok = Limit{Class: LimitQuota, Message: firstLine(msg)}, true
		if l.Message == "" {
			l.Message = "usage limit reached"
		}
	} else {
		l, ok = ClassifyMessage(msg, now, nil)
	}
	if !ok {
		return Limit{}, false
	}
	switch {
	case in > 0 && in < 1e9:
		l.ResetsAt = now.Add(time.Duration(in * float64(time.Second)))
	case at > 0 && at < 1e11:
		l.ResetsAt = time.Unix(int64(at), 0)
	}
	if !l.ResetsAt.IsZero() && l.Class == LimitThrottle && !l.GaveUp {
		l.Class = LimitQuota
	}
	return l, true
}
