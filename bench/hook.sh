#!/usr/bin/env bash
# bench/hook.sh [RUNS]: an agent's hook event -> the session's record.
#
# Runs the Claude Code stand-in (daemon/agent/testdata/claude) headless under
# sessiond until it waits at its prompt, then times, RUNS times (default
# 200), what Claude Code runs at each hook: `sessionctl hook claude-code`
# with a PostToolUse payload on stdin, which hands the event to the daemon
# and returns once the daemon has applied it and written the record.
# Prints the median, p90, p99 and max of the whole hook process, and of the
# daemon's part alone (an HTTP request with curl). DESIGN.md §7 target:
# agent hook -> record (the hook process included) ≤ 20 ms p99.
source "$(dirname "$0")/lib.sh"

RUNS=${1:-200}

bench_init
command -v go >/dev/null || die "go is needed to build the stand-in agent"
(cd "$ROOT" && go build -o "$BENCH_TMP/agents/claude" ./daemon/agent/testdata/claude) || die "build the stand-in agent"
sd_start
proj=$BENCH_TMP/project
mkdir -p "$proj" "$BENCH_TMP/home"
id=$(sctl start -q --checkpoint "" --env "PATH=$BENCH_TMP/agents:/usr/bin:/bin" --env "HOME=$BENCH_TMP/home" \
	--env FAKEAGENT_SCRIPT=prompt,hang "$proj" -- claude -p "bench")
wait_until 20 sh -c "'$BIN/sessionctl' --socket '$SD_SOCK' inspect $id | grep -q '\"state\": \"working\"'" || die "the agent did not start"
transcript=$(sctl inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["agent"]["transcript_path"])')
conv=$(sctl inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["agent"]["conversation_id"])')
payload=$BENCH_TMP/payload.json
python3 - "$conv" "$transcript" "$proj" >"$payload" <<'EOF'
import json, sys
print(json.dumps({"session_id": sys.argv[1], "transcript_path": sys.argv[2], "cwd": sys.argv[3],
    "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "go test ./..."},
    "tool_response": {"stdout": "ok  \tgithub.com/example/app\t0.412s\n" * 40, "stderr": "", "interrupted": False}}))
EOF
body=$BENCH_TMP/body.json
python3 - "$payload" >"$body" <<'EOF'
import json, sys
print(json.dumps({"agent": "claude-code", "payload": open(sys.argv[1]).read()}))
EOF

times=$BENCH_TMP/times
: >"$times.hook"
: >"$times.api"
for ((i = 0; i < RUNS; i++)); do
	a=$(now_ns)
	SESSIOND_SESSION_ID=$id "$BIN/sessionctl" --socket "$SD_SOCK" hook claude-code <"$payload" >/dev/null
	b=$(now_ns)
	curl -sf --unix-socket "$SD_SOCK" -o /dev/null -H 'Content-Type: application/json' --data @"$body" \
		"http://sessiond/v1/sessions/$id/agent/hook"
	c=$(now_ns)
	echo $((b - a)) >>"$times.hook"
	echo $((c - b)) >>"$times.api"
done
stats() {
	python3 - "$1" <<'EOF'
import sys
v = sorted(int(l) / 1e6 for l in open(sys.argv[1]))
q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
print(f"median {q(0.5):.2f} ms, p90 {q(0.9):.2f} ms, p99 {q(0.99):.2f} ms, max {v[-1]:.2f} ms over {len(v)}")
EOF
}
log "sessionctl hook claude-code (whole process): $(stats "$times.hook")"
log "POST /v1/sessions/ID/agent/hook (curl, the daemon's part): $(stats "$times.api")"
