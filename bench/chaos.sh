#!/usr/bin/env bash
# bench/chaos.sh [SECONDS] — the DESIGN.md §8 crash test: sessions start and
# end all the time while the daemon is killed with SIGKILL at random moments
# and started again. At the end every session must be adopted or ended (a
# `crashed` one with its handoff), every JSON file must parse, and after
# `stop --all` no process of any session may be left.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${1:-30}
bench_init
D=$BENCH_TMP
SOCK=$D/s.sock
ctl() { "$BIN/sessionctl" --socket "$SOCK" "$@"; }

# history_limit above anything a run starts, so that every session started
# must still be listed at the end: a missing one is a loss, not pruning.
printf 'history_limit = 1000000\n' >"$D/sessiond.toml"
start_daemon() {
	"$BIN/sessiond" run --config "$D/sessiond.toml" --state-dir "$D/state" --socket "$SOCK" --log-level warn >>"$D/daemon.log" 2>&1 &
	SD_PID=$!
	for _ in $(seq 200); do ctl version >/dev/null 2>&1 && return 0; sleep 0.05; done
	die "sessiond did not come up (see $D/daemon.log)"
}

start_daemon
mkdir -p "$D/p"
kills=0 starts=0 stops=0
end=$(( $(date +%s) + DURATION ))
next_kill=$(( $(date +%s) + 2 + RANDOM % 3 ))
i=0
log "churn for ${DURATION}s: sessions of 0.2-3 s, stops, and SIGKILL of the daemon every 2-4 s"
while [ "$(date +%s)" -lt "$end" ]; do
	i=$((i + 1))
	dir=$D/p/$((i % 40))
	mkdir -p "$dir"
	life=$(awk -v r=$RANDOM 'BEGIN { printf "%.1f", 0.2 + (r % 28) / 10 }')
	# Some sessions leave a setsid'd grandchild behind, to be cleaned up.
	if ((i % 5 == 0)); then
		cmd=(sh -c "setsid sleep 300 & sleep $life")
	else
		cmd=(sleep "$life")
	fi
	if id=$(ctl start -q --stop-grace 1s "$dir" -- "${cmd[@]}" 2>/dev/null); then
		starts=$((starts + 1)); echo "$id" >>"$D/started"
	fi
	if ((i % 7 == 0)); then
		ctl stop "$dir" >/dev/null 2>&1 && stops=$((stops + 1)) || true
	fi
	if [ "$(date +%s)" -ge "$next_kill" ]; then
		kill -9 "$SD_PID"; wait "$SD_PID" 2>/dev/null || true
		kills=$((kills + 1))
		sleep 0.$((RANDOM % 5))
		start_daemon
		next_kill=$(( $(date +%s) + 2 + RANDOM % 3 ))
	fi
done
log "$starts starts, $stops stops, $kills daemon kills; checking"

fail=0
check() { if ! "$@"; then fail=1; fi; }

# Every session started is listed (history_limit prunes none here), as a
# live or ended one; every ended one has its handoff and exactly one
# progress entry in its project.
ctl ps -a --chains --json >"$D/ps.json"
python3 - "$D/ps.json" "$D/state" "$D/started" "$D/p" <<'PY' || fail=1
import json, os, sys
recs = json.load(open(sys.argv[1]))
bad = 0
listed = {r["id"] for r in recs}
started = [l.strip() for l in open(sys.argv[3]) if l.strip()] if os.path.exists(sys.argv[3]) else []
for sid in started:
    if sid not in listed:
        print("session started but not listed:", sid); bad += 1
entries = {}
for root, _, files in os.walk(sys.argv[4]):
    for f in files:
        if f == "progress.md":
            for line in open(os.path.join(root, f)):
                if line.startswith("Session ") and ", ended:" in line:
                    sid = line.split()[1].rstrip(",")
                    entries[sid] = entries.get(sid, 0) + 1
for r in recs:
    if r["state"] == "ended" and entries.get(r["id"], 0) != 1:
        print("ended session with %d progress entries:" % entries.get(r["id"], 0), r["id"], r["end_reason"]); bad += 1
for r in recs:
    if r["state"] in ("ended",):
        p = os.path.join(sys.argv[2], "sessions", r["id"], "handoff.json")
        if not os.path.exists(p):
            print("ended session without a handoff:", r["id"], r["end_reason"]); bad += 1
    elif r["state"] not in ("running", "warned", "stopping", "starting", "failed"):
        print("unexpected state", r["id"], r["state"]); bad += 1
reasons = {}
for r in recs:
    reasons[r["state"] + "/" + (r["end_reason"] or "-")] = reasons.get(r["state"] + "/" + (r["end_reason"] or "-"), 0) + 1
print("records:", len(recs), dict(sorted(reasons.items())))
sys.exit(1 if bad else 0)
PY

# No corrupt file anywhere: every JSON file under the state dir and the
# projects' .sessiond parses; nothing was kept aside as corrupt.
python3 - "$D" <<'PY' || fail=1
import json, os, sys
bad = n = 0
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        if ".corrupt-" in f:
            print("corrupt file kept aside:", p); bad += 1
        if f.endswith(".json"):
            n += 1
            try:
                json.load(open(p))
            except Exception as e:
                print("unreadable:", p, e); bad += 1
print("JSON files checked:", n)
sys.exit(1 if bad else 0)
PY

# stop --all must finish: a stop that hangs is a failure (with a goroutine
# dump of the daemon in its log).
ctl stop --all >"$D/stop.out" 2>&1 &
stopper=$!
for _ in $(seq 300); do kill -0 "$stopper" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$stopper" 2>/dev/null; then
	log "stop --all still running after 30 s"
	kill -QUIT "$SD_PID"; sleep 1; cp "$D/daemon.log" "${TMPDIR:-/tmp}/sessiond-chaos-daemon.log"
	log "daemon goroutines: ${TMPDIR:-/tmp}/sessiond-chaos-daemon.log"
	kill "$stopper" 2>/dev/null || true
	fail=1
	start_daemon
elif ! wait "$stopper"; then
	log "stop --all failed: $(tail -3 "$D/stop.out")"; fail=1
fi
# No process of any session is left: nothing carries our socket in its env.
left=$(grep -lsa "SESSIOND_SOCKET=$SOCK" /proc/[0-9]*/environ 2>/dev/null | grep -v "^/proc/$SD_PID/" || true)
if [ -n "$left" ]; then
	log "processes left after stop --all:"; for f in $left; do p=${f#/proc/}; p=${p%%/*}; ps -o pid=,ppid=,stat=,args= -p "$p" || true; done
	fail=1
fi
zombies=$( (ps -o pid=,stat= --ppid "$SD_PID" || true) | awk '$2 ~ /Z/' | wc -l)
[ "$zombies" -eq 0 ] || { log "$zombies zombie children of the daemon"; fail=1; }
log "left after stop --all: $(echo -n "$left" | grep -c . || true) processes, $zombies zombies"
if [ "$fail" -ne 0 ]; then
	# Keep what is needed to look into it; the exit trap still stops the
	# daemon and removes the rest.
	keep=${TMPDIR:-/tmp}/sessiond-chaos-failed-$(date +%s)
	mkdir -p "$keep" && cp -r "$D/daemon.log" "$D/ps.json" "$D/state" "$keep/" 2>/dev/null || true
	log "FAILED (daemon log and state kept in $keep)"
	exit 1
fi
log "passed"
