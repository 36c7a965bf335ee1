package ipc

import (
	"context"
	"net/url"

	"github.com/sessiond/sessiond/config"
)

// Notifications is the notification API: /v1/notify and below.
type Notifications interface {
	// NotifyStatus lists the rules that apply to the project dir (the
	// daemon's, the project's, and its spec's on_warning; the daemon's
	// alone when dir is "") and the notifier's counters.
	NotifyStatus(ctx context.Context, c Caller, dir string) (*NotifyStatus, error)
	// NotifyTest sends the sample event through one rule, or every rule,
	// at once, and says what happened to each.
	NotifyTest(ctx context.Context, c Caller, req NotifyTestRequest) (*NotifyTestResponse, error)
}

// Rule origins of NotifyRuleInfo.Origin.
const (
	// NotifyOriginDaemon is a [[notify]] rule of the daemon config.
	NotifyOriginDaemon = "daemon"
	// NotifyOriginProject is a [[notify]] rule of the project's sessiond.toml.
	NotifyOriginProject = "project"
	// NotifyOriginSpec is the spec's on_warning hook, a rule of its own.
	NotifyOriginSpec = "spec"
)

// NotifyRuleInfo is a notification rule as the daemon applies it.
type NotifyRuleInfo struct {
	// Number is the rule's place in the listing, from 1: what
	// "sessionctl notify test N" names.
	Number int `json:"number"`
	// Origin says where the rule comes from: daemon, project or spec.
	Origin string `json:"origin"`
	// Index is the rule's place among the [[notify]] tables of its file,
	// from 0, as config errors name it (notify[Index]).
	Index int `json:"index"`
	// Label names the rule: its name, else its sink and events.
	Label string `json:"label"`
	// Rule is the rule, its webhook URL cut to scheme and host.
	Rule config.NotifyRule `json:"rule"`
}

// NotifyStats counts what the daemon's notifier did since it started.
type NotifyStats struct {
	Published  uint64 `json:"published"`
	Duplicates uint64 `json:"duplicates"`
	Queued     uint64 `json:"queued"`
	Suppressed uint64 `json:"suppressed"`
	Dropped    uint64 `json:"dropped"`
	Sent       uint64 `json:"sent"`
	Failed     uint64 `json:"failed"`
	Pending    int64  `json:"pending"`
}

// NotifyStatus is the answer of GET /v1/notify.
type NotifyStatus struct {
	Rules []NotifyRuleInfo `json:"rules"`
	Stats NotifyStats      `json:"stats"`
	// ProjectDir is the project whose rules are listed, if any.
	ProjectDir string `json:"project_dir,omitempty"`
}

// NotifyTestRequest asks to send the sample event through a rule: Rule is
// its name or its number in the listing; "" means every rule. Dir, when
// set, adds the rules of that project.
type NotifyTestRequest struct {
	Dir  string `json:"dir,omitempty"`
	Rule string `json:"rule,omitempty"`
}

// NotifyTestResult says what happened to the sample event in one rule.
type NotifyTestResult struct {
	NotifyRuleInfo
	// Delivered is true when the sink took the notification.
	Delivered bool `json:"delivered"`
	// Error is the sink's error, when it did not.
	Error string `json:"error,omitempty"`
	// TookMS is how long the sink took, in milliseconds.
	TookMS int64 `json:"took_ms"`
}

// NotifyTestResponse is the answer of POST /v1/notify/test.
type NotifyTestResponse struct {
	Results []NotifyTestResult `json:"results"`
}

// NotifyStatus returns the notification rules that apply to dir (the
// daemon's alone when dir is "") and the notifier's counters.
func (c *Client) NotifyStatus(ctx context.Context, dir string) (*NotifyStatus, error) {
	var q url.Values
	if dir != "" {
		q = url.Values{"dir": {dir}}
	}
	return do[*NotifyStatus](ctx, c, "GET", "/notify", q, nil)
}

// NotifyTest sends the sample event through the rules req names.
func (c *Client) NotifyTest(ctx context.Context, req NotifyTestRequest) (*NotifyTestResponse, error) {
	return do[*NotifyTestResponse](ctx, c, "POST", "/notify/test", nil, req)
}
