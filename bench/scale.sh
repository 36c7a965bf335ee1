#!/usr/bin/env bash
# bench/scale.sh [N] [ROUNDS]: batch starts and stops at scale, sessiond
# alone. Each round, in a fresh daemon: N idle children (default 1000) in
# one `sessionctl start DIR... -- CMD`, the RSS once the run of starts has
# settled, then `sessionctl stop --all` (every handoff durable). ROUNDS
# (default 3) rounds, PAUSE seconds apart (default 30). Each round's daemon
# has a state dir of its own, and nothing is removed until the end: on ext4
# without a journal, files are slow to make for a minute or more after
# many were removed nearby, and removing the last round's state would time
# ext4 rather than sessiond.
#
# PROFILE=DIR also takes a CPU profile of the daemon during each start and
# each stop (the daemon runs with SESSIOND_PPROF=1; it needs a build with
# profiles, `make build TAGS=pprof`), as DIR/start1.pprof, DIR/stop1.pprof...:
# read them with `go tool pprof -top -cum FILE`.
source "$(dirname "$0")/lib.sh"

N=${1:-1000}
ROUNDS=${2:-3}
PAUSE=${PAUSE:-30}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -gt 0 ] && [[ $ROUNDS =~ ^[0-9]+$ ]] || die "usage: $0 [N] [ROUNDS]"

bench_init
log "N=$N ROUNDS=$ROUNDS PAUSE=$PAUSE tmp=$BENCH_TMP"
PROFILE=${PROFILE:-}
if [ -n "$PROFILE" ]; then
	mkdir -p "$PROFILE" || die "cannot make $PROFILE"
	export SESSIOND_PPROF=1
fi

profile() { # profile NAME SECONDS: a CPU profile of the daemon, in the background
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SD_SOCK" http://sessiond/debug/pprof/)
	[ "$code" = 200 ] || die "PROFILE: the daemon serves no profiles (HTTP $code); build it with \`make build TAGS=pprof\`"
	curl -s --unix-socket "$SD_SOCK" "http://sessiond/debug/pprof/profile?seconds=$2" -o "$PROFILE/$1.pprof" &
	PROF_PID=$!
	sleep 0.2
}

declare -a UP STOP RSS
for ((r = 1; r <= ROUNDS; r++)); do
	[ "$r" -gt 1 ] && sleep "$PAUSE"
	sd_start "$BENCH_TMP/sessiond-r$r" # a fresh daemon, its state dir empty
	mkprojects "$BENCH_TMP/r$r" "$N"
	[ -n "$PROFILE" ] && profile "start$r" 5
	t0=$(now_ns)
	sctl start -q $(seq -f "$BENCH_TMP/r$r/%g" 1 "$N") -- "$SLEEP" 100000 >/dev/null
	wait_until 60 sd_all_running "$N" || die "not all $N sessions running: $(sd_running)"
	t1=$(now_ns)
	UP[r]=$(ns_s "$t0" "$t1")
	[ -n "$PROFILE" ] && wait "$PROF_PID"
	sleep 4 # the daemon hands back what the starts used 2 s after the last
	RSS[r]=$(rss_mib "$SD_PID")
	[ -n "$PROFILE" ] && profile "stop$r" 5
	t0=$(now_ns)
	sctl stop --all >/dev/null
	t1=$(now_ns)
	STOP[r]=$(ns_s "$t0" "$t1")
	[ -n "$PROFILE" ] && wait "$PROF_PID"
	h=0
	for ((i = 1; i <= N; i++)); do [ -s "$BENCH_TMP/r$r/$i/.sessiond/handoff.json" ] && h=$((h + 1)); done
	log "round $r: $N up in ${UP[r]} s, RSS ${RSS[r]} MiB, stop --all ${STOP[r]} s, handoffs $h/$N"
	[ "$h" = "$N" ] || die "round $r: $h of $N handoffs on disk"
	kill -TERM "$SD_PID"; wait "$SD_PID" 2>/dev/null || true; SD_PID=
done

cat <<TABLE

## bench/scale.sh $N $ROUNDS — $(date -u +'%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs, pause $PAUSE s

| round | $N up, one call (s) | RSS, settled (MiB) | stop --all, every handoff durable (s) |
|---|---|---|---|
TABLE
for ((r = 1; r <= ROUNDS; r++)); do echo "| $r | ${UP[r]} | ${RSS[r]} | ${STOP[r]} |"; done
[ -z "$PROFILE" ] || log "profiles in $PROFILE"
