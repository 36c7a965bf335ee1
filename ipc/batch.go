package ipc

import (
	"context"
	"errors"
	"net/url"
)

// MaxBatch bounds the sessions one batch call starts or stops.
const MaxBatch = 10000

// StartResult is one start of a batch (POST /v1/sessions with an array):
// the new session, or why it did not start.
type StartResult struct {
	*StartResponse
	Error *ErrorBody `json:"error,omitempty"`
}

// StopBatchRequest asks to stop several sessions at once
// (POST /v1/sessions/stop): those named by IDs (ids, unique prefixes or
// names), or with All every live session of the caller.
type StopBatchRequest struct {
	IDs   []string `json:"ids,omitempty"`
	All   bool     `json:"all,omitempty"`
	Grace string   `json:"grace,omitempty"`
	// View "brief" (the query's view, not the body's) answers each stop
	// with its StopBrief instead of the whole record: a thousand records
	// are some 2 MB to encode, send and decode, for a line each. A daemon
	// that knows no view ignores the query and answers with records.
	View string `json:"-"`
}

// StopViewBrief is StopBatchRequest.View for StopResult.Brief.
const StopViewBrief = "brief"

// StopResult is one stop of a batch: the ended session (its record, or
// with the brief view its StopBrief), or why not.
type StopResult struct {
	ID      string     `json:"id"`
	Session *Session   `json:"session,omitempty"`
	Brief   *StopBrief `json:"brief,omitempty"`
	Error   *ErrorBody `json:"error,omitempty"`
}

// StopBrief is what a stop tells of the end: how it ended, where its
// handoff is, and what its cgroup killed.
type StopBrief struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	EndReason   string `json:"end_reason,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	Error       string `json:"error,omitempty"`
	HandoffPath string `json:"handoff_path,omitempty"`
	// Killed and Empty are the session's cgroup's (Cgroup).
	Killed int  `json:"killed,omitempty"`
	Empty  bool `json:"empty,omitempty"`
}

// BriefOf is rec's StopBrief.
func BriefOf(rec *Session) *StopBrief {
	b := &StopBrief{ID: rec.ID, State: rec.State, EndReason: rec.EndReason, ExitCode: rec.ExitCode,
		Signal: rec.Signal, Error: rec.Error, HandoffPath: rec.HandoffPath}
	if c := rec.Cgroup; c != nil {
		b.Killed, b.Empty = c.Killed, c.Empty
	}
	return b
}

// ErrorBodyOf is err as a batch result carries it.
func ErrorBodyOf(err error) *ErrorBody {
	var e *Error
	if errors.As(err, &e) {
		return &ErrorBody{Error: e.Message, Code: e.Code, Candidates: e.Candidates}
	}
	return &ErrorBody{Error: err.Error(), Code: CodeInternal}
}

// StartBatch starts a session for each request, at once; the results are
// in the order of the requests.
func (c *Client) StartBatch(ctx context.Context, reqs []StartRequest) ([]StartResult, error) {
	body, err := encodeStartRequests(make([]byte, 0, 512*len(reqs)), reqs)
	if err != nil {
		return nil, err
	}
	return do[[]StartResult](ctx, c, "POST", "/sessions", nil, encoded(body))
}

// StopBatch stops the sessions req names and returns once each end is on
// disk.
func (c *Client) StopBatch(ctx context.Context, req StopBatchRequest) ([]StopResult, error) {
	var q url.Values
	if req.View != "" {
		q = url.Values{"view": {req.View}}
	}
	return do[[]StopResult](ctx, c, "POST", "/sessions/stop", q, req)
}
