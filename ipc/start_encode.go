package ipc

import (
	"slices"
	"strconv"
)

// encodeStartRequest is json.Marshal(r), byte for byte, without
// reflection. Every `sessionctl start` sends one, and a short-lived
// command pays encoding/json's first look at StartRequest's forty fields
// in full: 5 % of the command's CPU (bench/README.md, issue 31). The error
// is encoding/json's, for a MaxCostUSD that is not a number.
func encodeStartRequest(b []byte, r *StartRequest) ([]byte, error) {
	var err error
	b = append(b, `{"dir":`...)
	b = appendString(b, r.Dir)
	if len(r.Command) > 0 {
		b = appendStrings(append(b, `,"command":`...), r.Command)
	}
	b = appendStringField(b, `,"name":`, r.Name)
	if len(r.Env) > 0 {
		b = appendStringMap(append(b, `,"env":`...), r.Env)
	}
	b = appendStringField(b, `,"timeout":`, r.Timeout)
	b = appendStringField(b, `,"warn_before":`, r.WarnBefore)
	b = appendStringField(b, `,"warn_signal":`, r.WarnSignal)
	b = appendTrueField(b, `,"warn_signal_force":`, r.WarnSignalForce)
	b = appendStringField(b, `,"on_warning":`, r.OnWarning)
	b = appendStringField(b, `,"stop_signal":`, r.StopSignal)
	b = appendStringField(b, `,"stop_grace":`, r.StopGrace)
	b = appendStringField(b, `,"idle_timeout":`, r.IdleTimeout)
	if r.Checkpoint != nil {
		b = appendString(append(b, `,"checkpoint":`...), *r.Checkpoint)
	}
	b = appendStringField(b, `,"restart":`, r.Restart)
	b = appendStringField(b, `,"agent":`, r.Agent)
	b = appendStringField(b, `,"waiting_timeout":`, r.WaitingTimeout)
	b = appendIntField(b, `,"max_tokens":`, r.MaxTokens)
	if r.MaxCostUSD != 0 {
		if b, err = appendFloat(append(b, `,"max_cost_usd":`...), r.MaxCostUSD); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, `,"resume":`, r.Resume)
	b = appendTrueField(b, `,"worktree":`, r.Worktree)
	b = appendStringField(b, `,"worktree_name":`, r.WorktreeName)
	b = appendStringField(b, `,"from":`, r.From)
	b = appendBoolPtrField(b, `,"tty":`, r.TTY)
	if len(r.Environ) > 0 {
		b = appendStrings(append(b, `,"environ":`...), r.Environ)
	}
	b = appendBoolPtrField(b, `,"inherit_env":`, r.InheritEnv)
	b = appendTrueField(b, `,"environ_of_first":`, r.EnvironOfFirst)
	b = appendStringField(b, `,"memory_max":`, r.MemoryMax)
	b = appendStringField(b, `,"memory_high":`, r.MemoryHigh)
	b = appendIntField(b, `,"pids_max":`, r.PidsMax)
	b = appendIntField(b, `,"cpu_weight":`, r.CPUWeight)
	b = appendStringField(b, `,"cpu_max":`, r.CPUMax)
	b = appendStringField(b, `,"limits":`, r.Limits)
	b = appendStringField(b, `,"pool":`, r.Pool)
	if r.Priority != nil {
		b = strconv.AppendInt(append(b, `,"priority":`...), int64(*r.Priority), 10)
	}
	b = appendBoolPtrField(b, `,"queue":`, r.Queue)
	b = appendStringField(b, `,"after":`, r.After)
	b = appendTrueField(b, `,"after_any":`, r.AfterAny)
	b = appendStringField(b, `,"on_limit":`, r.OnLimit)
	b = appendTrueField(b, `,"hard_deadline":`, r.HardDeadline)
	b = appendStringField(b, `,"stall_timeout":`, r.StallTimeout)
	return append(b, '}'), nil
}

// encodeStartRequests is json.Marshal(rs), as encodeStartRequest.
func encodeStartRequests(b []byte, rs []StartRequest) ([]byte, error) {
	return appendArray(b, rs, encodeStartRequest)
}

// startBody is the body of a start of one session.
func startBody(req *StartRequest) (encoded, error) {
	return encodeStartRequest(make([]byte, 0, 2048), req)
}

// The fields below are omitempty: a zero value is left out.

func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendTrueField(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

func appendIntField(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

func appendBoolPtrField(b []byte, key string, v *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(append(b, key...), *v)
}

// appendStringMap appends m as encoding/json does: its keys sorted.
func appendStringMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = appendString(append(b, ':'), m[k])
	}
	return append(b, '}')
}
