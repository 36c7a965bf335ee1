#!/usr/bin/env bash
# make demo: three sessions of a scripted agent in a small project, run by a
# private sessiond. One completes, one times out after its warning, one is
# killed; each next session starts with the restore summary, and the end
# shows the handoffs and the progress log.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${SESSIOND_BIN:-$root/bin}" # the binaries make build puts there
work=$(mktemp -d /tmp/sessiond-demo.XXXXXX)
export SESSIOND_SOCKET="$work/sessiond.sock"
export PATH="$bin:$PATH"
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT

# Bold headings on a terminal only: piped, or with NO_COLOR, no escape codes.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi
show() { printf '$ %s\n' "$*"; "$@"; }

sessiond run --state-dir "$work/state" --log-level warn 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do sessionctl version >/dev/null 2>&1 && break; sleep 0.05; done

proj="$work/shop"
mkdir -p "$proj/src"
cd "$proj"
git init -q -b main . && git config user.name demo && git config user.email demo@example.com
cat > feature_list.json <<'JSON'
{"features": [
  {"id": 1, "priority": 1, "description": "Add item to cart", "passes": false},
  {"id": 2, "priority": 2, "description": "Cart total with tax", "passes": false},
  {"id": 3, "priority": 3, "description": "Checkout form", "passes": false}
]}
JSON
git add -A && git commit -qm "Project skeleton"
agent="$root/docs/demo/agent.sh"

say "Session 1: the agent completes a task"
show sessionctl start --wait --checkpoint '@every 1s' . -- "$agent" finish || true
show sessionctl logs --lines 3 .

say "Session 2: resumes, runs out of time (warned 2s before its 4s deadline)"
show sessionctl start --wait --timeout 4s --warn-before 2s --stop-grace 1s . -- "$agent" slow || true
show sessionctl logs --lines 2 .

say "Session 3: resumes, hangs, and is killed"
id=$(sessionctl start -q . -- "$agent" hang | tail -1)
sessionctl state . | sed -n '1,6p'
sleep 1
show sessionctl kill -s KILL "$id"
for _ in $(seq 100); do sessionctl inspect "$id" | grep -q '"state": "ended"' && break; sleep 0.05; done

say "What the next session will be told"
show sessionctl state .

say "The last handoff (.sessiond/handoff.json)"
# The fields a person reads first, whole (arrays included), nothing else.
printf '$ sessionctl handoff .   # the fields read first\n'
sessionctl handoff . | awk '
BEGIN {
	n = split("end_reason exit_code signal task_attempted task_status current_step total_steps last_file_edited recommended_next_steps warnings", k, " ")
	for (i = 1; i <= n; i++) want["\"" k[i] "\":"] = 1
	print "{"
}
/^[{}]$/ { next }
/^  "/ { show = ($1 in want) }
show { print }
END { print "  ..."; print "}" }'


say "The progress log (.sessiond/progress.md)"
sed -n '5,200p' .sessiond/progress.md

say "All sessions"
show sessionctl ps -a
show sessionctl checkpoints .
