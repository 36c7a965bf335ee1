#!/usr/bin/env bash
# bench/ps.sh [N]: sessiond side by side with supervisord and pm2, N idle
# children each (default 100; `bench/ps.sh 1000` for the 1000-session figures).
#
# For each supervisor, in one run on one machine:
#   - time for N children to be up (all running), from the start command(s)
#   - whole-process latency of the list command (sessionctl ps / supervisorctl
#     status / pm2 ls), median and p90 over RUNS runs (hyperfine -N if present)
#   - the floor, a Go hello-world process: back to back, and interleaved
#     with sessionctl ps, inspect, remaining and report (bench/interleave.py),
#     each command's ratio to it; what a page fault costs here
#   - the start's floor (bench/startfloor.go): N durable starts with nothing
#     around them, in the loop the sequential starts run in; then the same
#     with what DESIGN.md §4 has a start make besides (-design)
#   - daemon RSS (VmRSS) with the N children live
#   - time to stop them all (sessiond: stop --all, which returns once every
#     handoff is written; the handoffs are then counted on disk)
#   - the stop's floor (bench/stopfloor.go): N children signalled and reaped
#     with nothing written, then with each end's files written durably and
#     nothing else; each stop's ratio to the latter
# and prints a markdown table with DESIGN.md §7's targets.
#
# Environment: RUNS (default 50), SD_CGROUPS (false: no cgroups), ANCHORS (default "supervisord pm2"; "" for
# sessiond alone), PAR (parallelism of the second, parallel start; default 8).
# Needs bin/ built (make build) and python3; installs supervisor (apt-get)
# and pm2 (npm) when missing, or skips them with a message.
source "$(dirname "$0")/lib.sh"

N=${1:-100}
RUNS=${RUNS:-50}
ANCHORS=${ANCHORS-supervisord pm2}
PAR=${PAR:-8}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -gt 0 ] || die "usage: $0 [N]"

bench_init
log "N=$N RUNS=$RUNS ANCHORS='$ANCHORS' tmp=$BENCH_TMP"
if ! command -v hyperfine >/dev/null; then
	log "hyperfine not found: trying apt-get install hyperfine (else a date +%s%N loop is used)"
	apt_install hyperfine || log "no hyperfine; using a shell loop"
fi
case " $ANCHORS " in *" supervisord "*) sv_setup ;; esac
case " $ANCHORS " in *" pm2 "*) pm2_setup ;; esac

declare -A R # results: R[<tool>.<figure>]
R[floor.stop_false]=— R[floor.stop_true]=—
for t in sessiond supervisord pm2; do
	for f in up cpu_start up_par up_batch ps_med ps_p90 psj_med psj_p90 rss rss_use rss_settled stop stop_par stop_batch handoffs fsync_start fsync_end; do R[$t.$f]=—; done
done

# -------------------------------------------------------------------- sessiond
# The start's floor is built now: a build removes its temporary files,
# which on this ext4 the next files made look past for a while.
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BENCH_TMP/startfloor" "$BENCH_DIR/startfloor.go" ||
	log "cannot build bench/startfloor.go: no floor for the start"
sd_start
mkprojects "$SD_DIR/p" "$N"
# What making a file costs here now, beside the daemon's files: a start
# makes some ten. On ext4 without a journal it grows with the inodes freed
# in the last minutes (each is looked past), by a run before this one too.
R[floor.file_us]=$(python3 -c '
import os, sys, time
base = sys.argv[1]
os.mkdir(base)
n, t = 0, time.perf_counter()
for i in range(100):
    d = os.path.join(base, str(i))
    os.mkdir(d)
    n += 1
    for j in range(3):
        os.close(os.open(os.path.join(d, str(j)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        n += 1
print("%.0f" % ((time.perf_counter() - t) / n * 1e6))' "$BENCH_TMP/files") || R[floor.file_us]=—
# The start's floor (bench/startfloor.go), in the loop the sequential
# starts below run in, just before them (a file costs what it costs for
# both, on this ext4 more the more inodes were freed lately): N clients,
# each a process as small as the hello world, asking a server that forks
# and executes the command, waits for the exec, and writes the session's
# record in a directory of its own with one sync before it answers. Then
# the same with what DESIGN.md §4 has a start make besides (-design: the
# session's log and environment, the project's .sessiond, context.md and
# lock, a cgroup of the session's own where a v2 hierarchy takes one, the
# caller's environment for the command): the floor of a start as designed.
# start_floor NAME [-design]: prints the seconds, or — .
start_floor() {
	local d="$BENCH_TMP/sfloor-$1" sf t0 t1 i said secs=—
	mkprojects "$d/p" "$N"
	mkdir -p "$d/state"
	"$BENCH_TMP/startfloor" serve -sock "$d/s.sock" -dir "$d/state" -sleep "$SLEEP" ${2:-} >/dev/null &
	sf=$!
	if wait_until 10 test -S "$d/s.sock"; then
		t0=$(now_ns)
		for ((i = 1; i <= N; i++)); do
			"$BENCH_TMP/startfloor" start -sock "$d/s.sock" "$d/p/$i" >/dev/null || break
		done
		t1=$(now_ns)
		[ "$i" -gt "$N" ] && secs=$(ns_s "$t0" "$t1")
		said=$("$BENCH_TMP/startfloor" stop -sock "$d/s.sock") || kill "$sf"
		[ -n "${2:-}" ] && [ -n "$said" ] && log "the start's floor as designed: ${said#stopped } made"
	else
		kill "$sf"
	fi
	wait "$sf" 2>/dev/null || true
	echo "$secs"
}
R[floor.start]=— R[floor.start_design]=—
if [ -x "$BENCH_TMP/startfloor" ]; then
	R[floor.start]=$(start_floor bare)
	R[floor.start_design]=$(start_floor design -design)
fi
log "sessiond: a file made here costs ${R[floor.file_us]} µs now; the start's floor ${R[floor.start]} s, as designed ${R[floor.start_design]} s; starting $N sessions (sequential sessionctl start)"
# What the starts cost in CPU beside their time: the daemon's, and that of
# the loop's processes (sessionctl, each forked by this shell); the two
# share the machine's cores.
read -r du0 ds0 < <(proc_cpu "$SD_PID")
times >"$BENCH_TMP/times.0"
t0=$(now_ns)
for ((i = 1; i <= N; i++)); do
	sctl start -q "$SD_DIR/p/$i" -- "$SLEEP" 100000 >/dev/null
done
t1=$(now_ns)
times >"$BENCH_TMP/times.1"
read -r du1 ds1 < <(proc_cpu "$SD_PID")
read -r cu0 cs0 < <(times_ms "$BENCH_TMP/times.0")
read -r cu1 cs1 < <(times_ms "$BENCH_TMP/times.1")
wait_until 60 sd_all_running "$N" || die "sessiond: not all $N sessions running: $(sd_running)"
t2=$(now_ns)
R[sessiond.up]=$(ns_s "$t0" "$t2")
HZ=$(getconf CLK_TCK)
R[sessiond.cpu_start]=$(awk -v n="$N" -v hz="$HZ" -v du=$((du1 - du0)) -v ds=$((ds1 - ds0)) -v cu=$((cu1 - cu0)) -v cs=$((cs1 - cs0)) -v ns=$((t1 - t0)) \
	'BEGIN { printf "%.2f / %.2f; %.2f / %.2f; %.2f", du * 1000 / hz / n, ds * 1000 / hz / n, cu / n, cs / n, ns / 1e6 / n }')
log "sessiond: $N up in ${R[sessiond.up]} s; per start (ms): the daemon's CPU user / system, the loop's processes' user / system, the time: ${R[sessiond.cpu_start]}"
# Once a run of starts is over the daemon hands back what they used on the
# way (2 s after the last): this RSS is the steady one of N idle sessions.
sleep 4
R[sessiond.rss]=$(rss_mib "$SD_PID")
log "sessiond: RSS ${R[sessiond.rss]} MiB"
read -r "R[sessiond.ps_med]" "R[sessiond.ps_p90]" < <(latency sd-ps "$RUNS" "$BIN/sessionctl" --socket "$SD_SOCK" ps)
read -r "R[sessiond.psj_med]" "R[sessiond.psj_p90]" < <(latency sd-psjson "$RUNS" "$BIN/sessionctl" --socket "$SD_SOCK" ps --json)
log "sessiond: ps median ${R[sessiond.ps_med]} ms p90 ${R[sessiond.ps_p90]} ms; ps --json median ${R[sessiond.psj_med]} ms"
[ "$(sctl ps -q | wc -l)" -ge "$N" ] || die "sessiond: ps lists fewer than $N sessions"
# The floor: a Go hello-world process, built as sessionctl is, in the same
# run; each command's whole-process latency beside it. They are timed
# interleaved (bench/interleave.py: a round runs each once, in a shuffled
# order, the rounds repeat), so that a shared machine that slows down or speeds up moves
# them alike; each ratio is the median of the rounds' own.
mkdir -p "$BENCH_TMP/hello"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("hello\\n") }\n' >"$BENCH_TMP/hello/main.go"
(cd "$BENCH_TMP/hello" && printf 'module hello\n\ngo 1.22\n' >go.mod && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o hello .) ||
	die "cannot build the hello-world floor (go is needed)"
read -r "R[floor.b2b]" _ < <(latency floor "$RUNS" "$BENCH_TMP/hello/hello")
one=$(sctl ps -q | sed -n 1p) # sed reads it all: no SIGPIPE under pipefail
ctl=$(printf '%q --socket %q' "$BIN/sessionctl" "$SD_SOCK")
while read -r name med p90 _ paired; do
	R[$name.med]=$med R[$name.p90]=$p90 R[$name.ratio]=$paired
done < <(python3 "$(dirname "$0")/interleave.py" "$RUNS" "floor=$BENCH_TMP/hello/hello" "ps=$ctl ps" "inspect=$ctl inspect $one" \
	"remaining=$ctl remaining $one" "report=$ctl report --session $one --summary bench")
# What a process start costs here: the first touch of a page (a page
# fault), timed over 20000 pages; a Go hello world makes some 200.
R[floor.fault_us]=$(python3 -c '
import mmap, time
n = 20000
m = mmap.mmap(-1, n * 4096)
t = time.perf_counter()
for i in range(0, n * 4096, 4096): m[i] = 1
print("%.1f" % ((time.perf_counter() - t) / n * 1e6))')
t0=$(now_ns)
for ((i = 1; i <= N; i++)); do "$BENCH_TMP/hello/hello" >/dev/null; done
t1=$(now_ns)
R[floor.loop]=$(ns_s "$t0" "$t1")
# The same RSS in use: after the list, inspect, remaining and report above
# (a daemon lets go of its executable's pages once a run of starts is
# over; what serving uses comes back).
R[sessiond.rss_use]=$(rss_mib "$SD_PID")
log "sessiond: RSS ${R[sessiond.rss_use]} MiB in use (after the commands timed above)"
log "floor (Go hello world) ${R[floor.med]} ms, $N in a loop ${R[floor.loop]} s, $N durable starts in the loop ${R[floor.start]} s, a page's first touch ${R[floor.fault_us]} µs; interleaved: ps ${R[ps.med]} ms (${R[ps.ratio]}×), inspect ${R[inspect.med]} ms (${R[inspect.ratio]}×), remaining ${R[remaining.med]} ms (${R[remaining.ratio]}×), report ${R[report.med]} ms (${R[report.ratio]}×)"
t0=$(now_ns)
sctl stop --all >"$SD_DIR/stop.out"
t1=$(now_ns)
R[sessiond.stop]=$(ns_s "$t0" "$t1")
h=0
for ((i = 1; i <= N; i++)); do [ -s "$SD_DIR/p/$i/.sessiond/handoff.json" ] && h=$((h + 1)); done
R[sessiond.handoffs]=$h
log "sessiond: stop --all ${R[sessiond.stop]} s, handoffs written: $h/$N"

# Second round, started in parallel (PAR sessionctl processes at a time):
# separates the daemon's start cost from the cost of N sequential CLI processes.
mkprojects "$SD_DIR/q" "$N"
log "sessiond: starting $N sessions again, $PAR sessionctl start at a time"
t0=$(now_ns)
seq 1 "$N" | xargs -P "$PAR" -I{} "$BIN/sessionctl" --socket "$SD_SOCK" start -q "$SD_DIR/q/{}" -- "$SLEEP" 100000 >/dev/null
wait_until 60 sd_all_running "$N" || die "sessiond: not all $N sessions running (parallel): $(sd_running)"
t1=$(now_ns)
R[sessiond.up_par]=$(ns_s "$t0" "$t1")
t0=$(now_ns)
sctl stop --all >/dev/null
t1=$(now_ns)
R[sessiond.stop_par]=$(ns_s "$t0" "$t1")
log "sessiond: $N up (parallel) in ${R[sessiond.up_par]} s; stop --all ${R[sessiond.stop_par]} s"

# Third round: all N in one call (sessionctl start DIR... -- CMD, one POST
# /v1/sessions with an array).
mkprojects "$SD_DIR/b" "$N"
log "sessiond: starting $N sessions in one sessionctl start"
t0=$(now_ns)
sctl start -q $(seq -f "$SD_DIR/b/%g" 1 "$N") -- "$SLEEP" 100000 >/dev/null
wait_until 60 sd_all_running "$N" || die "sessiond: not all $N sessions running (batch): $(sd_running)"
t1=$(now_ns)
R[sessiond.up_batch]=$(ns_s "$t0" "$t1")
# The same, with the ended sessions of the first rounds in the history:
# 2N, or the 1000 of the default history_limit.
KEPT=$((2 * N > 1000 ? 1000 : 2 * N))
sleep 4
R[sessiond.rss_settled]=$(rss_mib "$SD_PID")
log "sessiond: RSS ${R[sessiond.rss_settled]} MiB after the batch, $KEPT ended sessions kept"
t0=$(now_ns)
sctl stop --all >/dev/null
t1=$(now_ns)
R[sessiond.stop_batch]=$(ns_s "$t0" "$t1")
log "sessiond: $N up (one call) in ${R[sessiond.up_batch]} s; stop --all ${R[sessiond.stop_batch]} s"

# Fourth round, counted: the syncs the daemon makes per start and per end
# (fsync and fdatasync of one file, syncfs of a whole file system, which a
# group commit makes for many writes at once), with strace attached (it
# slows the daemon: no times).
if command -v strace >/dev/null || apt_install strace; then
	mkprojects "$SD_DIR/c" "$N"
	count_syncs() { awk '$NF == "fsync" || $NF == "fdatasync" || $NF == "syncfs" { n += $4 } END { print n + 0 }' "$1"; }
	strace -c -f -e trace=fsync,fdatasync,syncfs -p "$SD_PID" -o "$SD_DIR/strace.start" 2>/dev/null &
	st=$!
	sleep 1
	sctl start -q $(seq -f "$SD_DIR/c/%g" 1 "$N") -- "$SLEEP" 100000 >/dev/null
	wait_until 120 sd_all_running "$N" || die "sessiond: not all $N sessions running (counted)"
	kill -INT "$st"; wait "$st" 2>/dev/null || true
	strace -c -f -e trace=fsync,fdatasync,syncfs -p "$SD_PID" -o "$SD_DIR/strace.stop" 2>/dev/null &
	st=$!
	sleep 1
	sctl stop --all >/dev/null
	kill -INT "$st"; wait "$st" 2>/dev/null || true
	R[sessiond.fsync_start]=$(awk -v n="$(count_syncs "$SD_DIR/strace.start")" -v N="$N" 'BEGIN { printf "%.1f", n / N }')
	R[sessiond.fsync_end]=$(awk -v n="$(count_syncs "$SD_DIR/strace.stop")" -v N="$N" 'BEGIN { printf "%.1f", n / N }')
	log "sessiond: syncs per start ${R[sessiond.fsync_start]}, per end ${R[sessiond.fsync_end]}"
fi
kill -TERM "$SD_PID"; wait "$SD_PID" 2>/dev/null || true; SD_PID=

# ----------------------------------------------------------------- supervisord
if [ "$HAVE_SV" = 1 ]; then
	sv_start "$N"
	log "supervisord: supervisorctl start all ($N programs, default startsecs=1)"
	t0=$(now_ns)
	supervisorctl -c "$SV_CONF" start all >/dev/null 2>&1 || true
	wait_until 120 sv_all_running "$N" || die "supervisord: not all $N running: $(sv_running)"
	t1=$(now_ns)
	R[supervisord.up]=$(ns_s "$t0" "$t1")
	log "supervisord: $N up in ${R[supervisord.up]} s"
	sleep 1
	read -r "R[supervisord.ps_med]" "R[supervisord.ps_p90]" < <(latency sv-status "$RUNS" supervisorctl -c "$SV_CONF" status)
	log "supervisord: status median ${R[supervisord.ps_med]} ms p90 ${R[supervisord.ps_p90]} ms"
	R[supervisord.rss]=$(rss_mib "$SV_PID")
	t0=$(now_ns)
	supervisorctl -c "$SV_CONF" stop all >/dev/null 2>&1 || true
	t1=$(now_ns)
	R[supervisord.stop]=$(ns_s "$t0" "$t1")
	[ "$(sv_running)" = 0 ] || log "supervisord: still running after stop all: $(sv_running)"
	log "supervisord: RSS ${R[supervisord.rss]} MiB, stop all ${R[supervisord.stop]} s"
	supervisorctl -c "$SV_CONF" shutdown >/dev/null 2>&1 || true
	wait "$SV_PID" 2>/dev/null || true; SV_PID=
fi

# ------------------------------------------------------------ the stop's floor
# What a stop of N cannot do without here, with nothing else around it
# (bench/stopfloor.go): N children in process groups of their own, sent
# SIGTERM in one pass and reaped; then the same with, after each exit, the
# files an end writes before \`stop --all\` returns (handoff, session state,
# progress entry, the lock's release, the handoff's archive, the record),
# each replaced atomically and durably, the syncs group-committed.
if CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BENCH_TMP/stopfloor" "$BENCH_DIR/stopfloor.go"; then
	for w in false true; do
		rm -rf "$BENCH_TMP/floor-$w" && mkdir -p "$BENCH_TMP/floor-$w"
		if read -r _ _ secs _ < <("$BENCH_TMP/stopfloor" -n "$N" -dir "$BENCH_TMP/floor-$w" -sleep "$SLEEP" -writes="$w"); then
			R[floor.stop_$w]=$(awk -v s="$secs" 'BEGIN { printf "%.2f", s }')
		fi
	done
	log "the stop's floor: signalled and reaped ${R[floor.stop_false]} s; and each end's files written durably ${R[floor.stop_true]} s"
else
	log "cannot build bench/stopfloor.go: no floor for the stop"
fi

# ------------------------------------------------------------------------- pm2
if [ "$HAVE_PM2" = 1 ]; then
	pm2_start "$N"
	log "pm2: pm2 start ecosystem.json ($N apps)"
	t0=$(now_ns)
	pm2c start "$BENCH_TMP/pm2/ecosystem.json" >/dev/null 2>&1 || true
	wait_until 300 pm2_all_online "$N" || die "pm2: not all $N online: $(pm2_online)"
	t1=$(now_ns)
	R[pm2.up]=$(ns_s "$t0" "$t1")
	log "pm2: $N up in ${R[pm2.up]} s"
	sleep 1
	read -r "R[pm2.ps_med]" "R[pm2.ps_p90]" < <(PM2_HOME=$PM2_HOME_DIR latency pm2-ls "$RUNS" "$PM2_BIN" ls)
	log "pm2: ls median ${R[pm2.ps_med]} ms p90 ${R[pm2.ps_p90]} ms"
	R[pm2.rss]=$(rss_mib "$(pm2_pid)")
	t0=$(now_ns)
	pm2c stop all >/dev/null 2>&1 || true
	t1=$(now_ns)
	R[pm2.stop]=$(ns_s "$t0" "$t1")
	[ "$(pm2_online)" = 0 ] || log "pm2: still online after stop all: $(pm2_online)"
	log "pm2: RSS ${R[pm2.rss]} MiB, stop all ${R[pm2.stop]} s"
	pm2c kill >/dev/null 2>&1 || true
	PM2_HOME_DIR=
fi

# ---------------------------------------------------------------------- report
# ratio A B -> A ÷ B to two decimals, or — when either is missing
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "—" || b == "—" || a == "" || b + 0 == 0) print "—"; else printf "%.2f", a / b }'; }
# verdict VALUE OP LIMIT -> met / **MISSED** (OP: <=, <, >=), — when either is missing
verdict() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { if (v == "—" || v == "" || l == "—" || l == "") { print "—"; exit } ok = (op == "<=") ? (v + 0 <= l + 0) : (op == "<") ? (v + 0 < l + 0) : (v + 0 >= l + 0); print ok ? "met" : "**MISSED**" }'; }
speedup=—
if [ "${R[supervisord.ps_med]}" != — ]; then
	speedup=$(awk -v a="${R[supervisord.ps_med]}" -v b="${R[sessiond.ps_med]}" 'BEGIN { printf "%.1f", a / b }')
fi
# DESIGN.md §7's targets, for the N they are set at (100 or 1000); other
# N print none. T[<figure>] is the target's text, V[<figure>] its verdict.
declare -A T V
for f in ps ratio rss up batch stop stop_par stop_batch; do T[$f]= V[$f]=; done
half_sv=—
[ "${R[supervisord.up]}" = — ] || half_sv=$(awk -v s="${R[supervisord.up]}" 'BEGIN { printf "%.2f", s / 2 }')
if [ "$N" = 100 ]; then
	T[ps]="≤ 2× the floor: rows below"
	T[ratio]="each ≤ 2×"
	V[ratio]="$(verdict "${R[ps.ratio]}" "<=" 2); $(verdict "${R[inspect.ratio]}" "<=" 2); $(verdict "${R[remaining.ratio]}" "<=" 2); $(verdict "${R[report.ratio]}" "<=" 2)"
	T[rss]="≤ 15 MiB (in use)" V[rss]=$(verdict "${R[sessiond.rss_use]}" "<=" 15)
	T[up]="≤ 0.5 s" V[up]=$(verdict "${R[sessiond.up]}" "<=" 0.5)
	T[batch]="≤ 0.3 s" V[batch]=$(verdict "${R[sessiond.up_batch]}" "<=" 0.3)
	for f in stop stop_par stop_batch; do T[$f]="≤ 0.3 s" V[$f]=$(verdict "${R[sessiond.$f]}" "<=" 0.3); done
elif [ "$N" = 1000 ]; then
	T[ps]="≤ 15 ms" V[ps]=$(verdict "${R[sessiond.ps_med]}" "<=" 15)
	T[rss]="≤ 30 MiB (in use)" V[rss]=$(verdict "${R[sessiond.rss_use]}" "<=" 30)
	T[batch]="≤ half of supervisord's \`start all\` ($half_sv s)" V[batch]=$(verdict "${R[sessiond.up_batch]}" "<=" "$half_sv")
	for f in stop stop_par stop_batch; do
		T[$f]="below supervisord's \`stop all\` (${R[supervisord.stop]} s)" V[$f]=$(verdict "${R[sessiond.$f]}" "<" "${R[supervisord.stop]}")
	done
fi

cpus=$(nproc)
cat <<EOF

## bench/ps.sh $N — $(date -u +'%Y-%m-%d %H:%M UTC'), $(uname -sr), $cpus CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $RUNS runs$(command -v hyperfine >/dev/null && echo ", $(hyperfine --version)")

| figure ($N idle children) | sessiond | supervisord | pm2 | DESIGN.md §7 target (sessiond) | sessiond |
|---|---|---|---|---|---|
| list, whole process, median (ms): \`sessionctl ps\` / \`supervisorctl status\` / \`pm2 ls\` | ${R[sessiond.ps_med]} | ${R[supervisord.ps_med]} | ${R[pm2.ps_med]} | ${T[ps]} | ${V[ps]} |
| list, p90 (ms) | ${R[sessiond.ps_p90]} | ${R[supervisord.ps_p90]} | ${R[pm2.ps_p90]} | | |
| \`sessionctl ps --json\` median / p90 (ms) | ${R[sessiond.psj_med]} / ${R[sessiond.psj_p90]} | | | | |
| supervisorctl status ÷ sessionctl ps (median) | ${speedup}× | | | | |
| daemon RSS (MiB, VmRSS), N idle sessions: 4 s after the last start / in use, after the commands timed below | ${R[sessiond.rss]} / ${R[sessiond.rss_use]} | ${R[supervisord.rss]} | ${R[pm2.rss]} | ${T[rss]} | ${V[rss]} |
| daemon RSS after the batch start below, $KEPT ended sessions kept (MiB) | ${R[sessiond.rss_settled]} | | | | |
| $N up, all running (s) — sessiond: sequential \`sessionctl start\`; supervisord: \`start all\` (startsecs=1); pm2: \`start ecosystem.json\` | ${R[sessiond.up]} | ${R[supervisord.up]} | ${R[pm2.up]} | ${T[up]} | ${V[up]} |
| $N up, sessiond with $PAR \`sessionctl start\` in parallel (s) | ${R[sessiond.up_par]} | | | | |
| stop all (s): \`stop --all\` (every handoff written) / \`supervisorctl stop all\` / \`pm2 stop all\` | ${R[sessiond.stop]} | ${R[supervisord.stop]} | ${R[pm2.stop]} | ${T[stop]} | ${V[stop]} |
| \`stop --all\`, second round (s) | ${R[sessiond.stop_par]} | | | ${T[stop_par]} | ${V[stop_par]} |
| $N up in one \`sessionctl start DIR... -- CMD\` (s) | ${R[sessiond.up_batch]} | | | ${T[batch]} | ${V[batch]} |
| \`stop --all\` after it (s) | ${R[sessiond.stop_batch]} | | | ${T[stop_batch]} | ${V[stop_batch]} |
| the stop's floor (s), bench/stopfloor.go: $N children signalled and reaped, nothing written / and each end's files written before \`stop --all\` returns, atomically and durably, group-committed, nothing else | ${R[floor.stop_false]} / ${R[floor.stop_true]} | | | | |
| \`stop --all\` ÷ the durable floor: first / second / third round | $(ratio "${R[sessiond.stop]}" "${R[floor.stop_true]}") / $(ratio "${R[sessiond.stop_par]}" "${R[floor.stop_true]}") / $(ratio "${R[sessiond.stop_batch]}" "${R[floor.stop_true]}") | $(ratio "${R[supervisord.stop]}" "${R[floor.stop_true]}") | $(ratio "${R[pm2.stop]}" "${R[floor.stop_true]}") | | |
| Go hello-world process, whole process, median (ms): run back to back as the list above / $N of them in a loop, as the sequential starts above (s) / a page's first touch (µs) | ${R[floor.b2b]} / ${R[floor.loop]} / ${R[floor.fault_us]} | | | | |
| a file made beside the daemon's, before the sequential starts (µs; a start makes some ten; on ext4 without a journal, more the more inodes were freed in the last minutes) | ${R[floor.file_us]} | | | | |
| the start's floor (s), bench/startfloor.go: $N durable starts in the same loop, each a client as small as the hello world whose server forks and executes the command and writes its record with one sync, nothing else | ${R[floor.start]} | | | | |
| $N sequential \`sessionctl start\`, per start (ms): the daemon's CPU, user / system; the CPU of the loop's processes (\`sessionctl\`, forked by the shell), user / system; the time | ${R[sessiond.cpu_start]} | | | | |
| the start's floor as designed (s), \`startfloor -design\`: the same, each start also making what DESIGN.md §4 has it make (the session's log and environment, the project's \`.sessiond\`, \`context.md\` and lock, a cgroup of its own that the command is forked into), the command given the caller's environment | ${R[floor.start_design]} | | | | |
| $N sequential \`sessionctl start\` ÷ the start's floor / ÷ the floor as designed | $(ratio "${R[sessiond.up]}" "${R[floor.start]}") / $(ratio "${R[sessiond.up]}" "${R[floor.start_design]}") | | | | |
| \`sessionctl ps\` ÷ the floor, each run back to back (hyperfine medians) | $(awk -v a="${R[sessiond.ps_med]}" -v b="${R[floor.b2b]}" 'BEGIN { printf "%.2f", a / b }') | | | | |
| the floor interleaved with the commands below, median (ms) | ${R[floor.med]} | | | | |
| interleaved with the floor, median (ms): \`sessionctl ps\` / \`inspect\` / \`remaining\` / \`report\` | ${R[ps.med]} / ${R[inspect.med]} / ${R[remaining.med]} / ${R[report.med]} | | | | |
| the same ÷ the floor (median of the rounds' ratios) | ${R[ps.ratio]} / ${R[inspect.ratio]} / ${R[remaining.ratio]} / ${R[report.ratio]} | | | ${T[ratio]} | ${V[ratio]} |
| syncs per start / per end (\`strace -c -f -e trace=fsync,fdatasync,syncfs\`) | ${R[sessiond.fsync_start]} / ${R[sessiond.fsync_end]} | 0 / 0 (writes nothing) | | | |
| handoffs on disk after \`stop --all\` | ${R[sessiond.handoffs]}/$N | | | $N/$N | $([ "${R[sessiond.handoffs]}" = "$N" ] && echo met || echo "**MISSED**") |
EOF
