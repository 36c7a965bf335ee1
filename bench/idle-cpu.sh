#!/usr/bin/env bash
# bench/idle-cpu.sh [N] [SECONDS]: CPU used by the idle daemon with N live
# sessions (default 100) over SECONDS of idleness (default 30), from
# utime+stime in /proc/PID/stat (clock ticks) and, finer, the run time in
# /proc/PID/schedstat (ns) summed over the daemon's threads. DESIGN.md §7
# target: ≤ 0.1 %.
#
# With ANCHORS (default "supervisord pm2"; "" for sessiond alone),
# supervisord and pm2's God daemon are measured too, with N idle children
# each, over the same window. SETTLE (default 25 s) is waited after the last
# start before the window opens: longer than the 20 s after which each watch
# stops its idle git helpers, a one-off cost that follows every start.
source "$(dirname "$0")/lib.sh"

N=${1:-100}
SECS=${2:-30}
ANCHORS=${ANCHORS-supervisord pm2}
SETTLE=${SETTLE:-25}

bench_init
log "N=$N window=${SECS}s ANCHORS='$ANCHORS' tmp=$BENCH_TMP"
case " $ANCHORS " in *" supervisord "*) sv_setup ;; esac
case " $ANCHORS " in *" pm2 "*) pm2_setup ;; esac

HZ=$(getconf CLK_TCK)
# ticks PID -> utime+stime of the process (all threads), in clock ticks
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# runns PID -> on-CPU time in ns summed over the process's threads
runns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'; }

sd_start
mkprojects "$SD_DIR/p" "$N"
for ((i = 1; i <= N; i++)); do sctl start -q "$SD_DIR/p/$i" -- "$SLEEP" 100000 >/dev/null; done
wait_until 60 sd_all_running "$N" || die "sessiond: not all $N sessions running"
log "sessiond: $N sessions running"

declare -A PIDS=([sessiond]=$SD_PID)
if [ "$HAVE_SV" = 1 ]; then
	sv_start "$N"
	supervisorctl -c "$SV_CONF" start all >/dev/null 2>&1 || true
	wait_until 120 sv_all_running "$N" || die "supervisord: not all $N running"
	PIDS[supervisord]=$SV_PID
fi
if [ "$HAVE_PM2" = 1 ]; then
	pm2_start "$N"
	pm2c start "$BENCH_TMP/pm2/ecosystem.json" >/dev/null 2>&1 || true
	wait_until 300 pm2_all_online "$N" || die "pm2: not all $N online"
	PIDS[pm2]=$(pm2_pid)
fi

log "settling ${SETTLE}s, then measuring ${SECS}s of idleness (nothing touches the daemons meanwhile)"
sleep "$SETTLE"
declare -A T0 S0 T1 S1
for k in "${!PIDS[@]}"; do T0[$k]=$(ticks "${PIDS[$k]}"); S0[$k]=$(runns "${PIDS[$k]}"); done
w0=$(now_ns)
sleep "$SECS"
for k in "${!PIDS[@]}"; do T1[$k]=$(ticks "${PIDS[$k]}"); S1[$k]=$(runns "${PIDS[$k]}"); done
w1=$(now_ns)
# Still all up? (checked after the window, so as not to disturb it)
[ "$(sd_running)" -ge "$N" ] || log "WARNING: sessiond has fewer than $N running sessions after the window"

cat <<EOF

## bench/idle-cpu.sh $N $SECS — $(date -u +'%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs, CLK_TCK=$HZ

| daemon ($N idle children, $(ns_s "$w0" "$w1") s window) | utime+stime (ticks) | CPU % (ticks) | on-CPU (schedstat, ms) | CPU % (schedstat) | §7 target | verdict |
|---|---|---|---|---|---|---|
EOF
for k in sessiond supervisord pm2; do
	[ -n "${PIDS[$k]:-}" ] || continue
	dt=$((T1[$k] - T0[$k]))
	ds=$((S1[$k] - S0[$k]))
	awk -v k="$k" -v dt="$dt" -v ds="$ds" -v hz="$HZ" -v w="$((w1 - w0))" 'BEGIN {
		pt = dt / hz / (w / 1e9) * 100; ps = ds / w * 100
		tgt = (k == "sessiond") ? "≤ 0.1 %" : ""
		v = (k == "sessiond") ? ((ps <= 0.1) ? "met" : "**MISSED**") : ""
		printf "| %s | %d | %.3f | %.1f | %.3f | %s | %s |\n", k, dt, pt, ds / 1e6, ps, tgt, v }'
done
