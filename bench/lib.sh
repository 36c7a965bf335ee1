# shellcheck shell=bash
# Shared helpers of the side-by-side benchmarks under bench/ (sourced, not run).
#
# Everything a script starts lives under one temporary directory ($BENCH_TMP)
# and is ended by bench_cleanup (installed as an EXIT trap by bench_init):
# sessiond (SIGTERM: it stops its sessions), supervisord (shutdown), pm2
# (pm2 kill with our own PM2_HOME), and as a last resort any process whose
# working directory is still inside $BENCH_TMP, killed by pid.

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BIN=$ROOT/bin
SLEEP=$(command -v sleep)

SD_PID= SV_PID= PM2_BIN= PM2_HOME_DIR= SV_CONF=
HAVE_SV=0 HAVE_PM2=0

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
now_ns() { date +%s%N; }
# ns_to_ms START END -> milliseconds with 1 decimal
ns_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
ns_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# rss_mib PID -> VmRSS in MiB (1 decimal), "n/a" if the process is gone.
rss_mib() {
	local kb
	kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || true
	if [ -z "$kb" ]; then echo n/a; else awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }'; fi
}

# proc_cpu PID -> PID's own user and system CPU so far, in clock ticks
# (not its children's).
proc_cpu() {
	awk '{ print $14, $15 }' "/proc/$1/stat" 2>/dev/null || echo "0 0"
}

# times_ms FILE -> the user and system CPU (ms) of a shell's waited-for
# children, from what bash's times wrote to FILE (times must run in that
# shell itself: a subshell's are its own).
times_ms() {
	awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d %d\n", (u[1] * 60 + u[2]) * 1000, (s[1] * 60 + s[2]) * 1000
	}' "$1"
}

# as_root CMD... runs CMD as root (directly, or through sudo -n).
as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; else return 1; fi
}

# apt_install PKG... installs Debian packages if apt-get is there (update on first failure).
apt_install() {
	command -v apt-get >/dev/null || return 1
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get install -y -qq "$@" >"$BENCH_TMP/apt.log" 2>&1 && return 0
	as_root apt-get update -qq >>"$BENCH_TMP/apt.log" 2>&1 || true
	as_root apt-get install -y -qq "$@" >>"$BENCH_TMP/apt.log" 2>&1
}

bench_init() {
	[ -x "$BIN/sessiond" ] && [ -x "$BIN/sessionctl" ] || die "no $BIN/sessiond or $BIN/sessionctl: run 'make build' in $ROOT first"
	command -v python3 >/dev/null || die "python3 is needed (JSON parsing, statistics)"
	BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sessiond-bench.XXXXXX")
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	# The benchmarks must not pick up a user's daemon settings.
	unset SESSIOND_CONFIG SESSIOND_SOCKET SESSIOND_STATE_DIR SESSIOND_SESSION_ID
}

bench_cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	[ -n "${BENCH_TMP:-}" ] || exit "$rc"
	log "cleaning up $BENCH_TMP"
	if [ -n "$SD_PID" ] && kill -0 "$SD_PID" 2>/dev/null; then
		kill -TERM "$SD_PID" 2>/dev/null
		for _ in $(seq 1 300); do kill -0 "$SD_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SD_PID" 2>/dev/null
	fi
	if [ -n "$SV_PID" ] && kill -0 "$SV_PID" 2>/dev/null; then
		supervisorctl -c "$SV_CONF" shutdown >/dev/null 2>&1 || kill -TERM "$SV_PID" 2>/dev/null
		for _ in $(seq 1 300); do kill -0 "$SV_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SV_PID" 2>/dev/null
	fi
	if [ -n "$PM2_HOME_DIR" ] && [ -e "$PM2_HOME_DIR/pm2.pid" ]; then
		PM2_HOME=$PM2_HOME_DIR timeout 60 "$PM2_BIN" kill >/dev/null 2>&1
		local gp
		gp=$(cat "$PM2_HOME_DIR/pm2.pid" 2>/dev/null)
		[ -n "$gp" ] && kill -KILL "$gp" 2>/dev/null
	fi
	# Last resort: anything still running inside our temporary tree, by pid.
	local p cwd
	for p in /proc/[0-9]*; do
		cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
		case $cwd in "$BENCH_TMP"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
	done
	rm -rf "$BENCH_TMP"
	exit "$rc"
}

# ---------------------------------------------------------------- statistics

# stats_ms FILE (one duration in seconds a line) -> "median p90" in ms.
stats_ms() {
	python3 - "$1" <<'EOF'
import sys, statistics
xs = sorted(float(l) for l in open(sys.argv[1]) if l.strip())
def pct(p):  # nearest-rank percentile
    import math
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]
print("%.2f %.2f" % (statistics.median(xs) * 1e3, pct(90) * 1e3))
EOF
}

# latency NAME RUNS CMD... -> prints "median p90" (ms) of the whole-process
# wall time of CMD over RUNS runs (hyperfine -N when available, else a loop).
latency() {
	local name=$1 runs=$2; shift 2
	local out=$BENCH_TMP/lat-$name
	if command -v hyperfine >/dev/null; then
		local cmdline
		cmdline=$(printf '%q ' "$@")
		if hyperfine -N -i --style none --warmup 3 --runs "$runs" --export-json "$out.json" -- "$cmdline" >"$out.log" 2>&1 ||
			hyperfine -i --style none --warmup 3 --runs "$runs" --export-json "$out.json" -- "$cmdline" >"$out.log" 2>&1; then
			python3 -c 'import json,sys; [print(t) for t in json.load(open(sys.argv[1]))["results"][0]["times"]]' "$out.json" >"$out.txt"
			stats_ms "$out.txt"
			return
		fi
		log "hyperfine failed for $name (see below); falling back to a loop"; cat "$out.log" >&2
	fi
	local i a b
	: >"$out.txt"
	for i in 1 2 3; do "$@" >/dev/null 2>&1 || true; done
	for ((i = 0; i < runs; i++)); do
		a=$(now_ns); "$@" >/dev/null 2>&1 || true; b=$(now_ns)
		awk -v a="$a" -v b="$b" 'BEGIN { printf "%.9f\n", (b - a) / 1e9 }' >>"$out.txt"
	done
	stats_ms "$out.txt"
}

# wait_until TIMEOUT_S CMD... polls CMD (every 10 ms) until it succeeds.
wait_until() {
	local deadline=$(($(date +%s) + $1)); shift
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.01
	done
}

# mkprojects DIR N -> DIR/1 .. DIR/N (empty, non-git project directories).
mkprojects() {
	mkdir -p "$1"
	(cd "$1" && seq 1 "$2" | xargs mkdir -p)
}

# ---------------------------------------------------------------- sessiond

SD_DIR= SD_SOCK=
sctl() { "$BIN/sessionctl" --socket "$SD_SOCK" "$@"; }

sd_start() { # sd_start [DIR]: a daemon whose config, state and socket are in DIR
	SD_DIR=${1:-$BENCH_TMP/sessiond}
	SD_SOCK=$SD_DIR/sessiond.sock
	mkdir -p "$SD_DIR"
	# An explicit config, so that /etc/sessiond/sessiond.toml is not read.
	printf 'log_level = "warn"\nlog_format = "json"\n' >"$SD_DIR/sessiond.toml"
	# SD_CGROUPS=false runs the sessions without cgroups of their own, to
	# measure what containment costs.
	[ -n "${SD_CGROUPS:-}" ] && printf 'cgroups = %s\n' "$SD_CGROUPS" >>"$SD_DIR/sessiond.toml"
	"$BIN/sessiond" run --config "$SD_DIR/sessiond.toml" --state-dir "$SD_DIR/state" --socket "$SD_SOCK" \
		>"$SD_DIR/daemon.log" 2>&1 </dev/null &
	SD_PID=$!
	wait_until 10 sctl ps -q >/dev/null 2>&1 || { cat "$SD_DIR/daemon.log" >&2; die "sessiond did not come up"; }
	log "sessiond up (pid $SD_PID), sessions contained: $(sctl --json version 2>/dev/null | python3 -c 'import json,sys; c=json.load(sys.stdin)["daemon"].get("containment") or {}; print(c.get("mode","?"), c.get("path",""))' 2>/dev/null)"
}

# sd_running -> number of running sessions. The supervisor's own tool
# counts, as for the others (supervisorctl status, pm2 jlist): a check
# that starts python3 (130 ms on some of these machines) would add that to
# every "N up" figure it ends.
sd_running() {
	sctl ps -q --filter state=running 2>/dev/null | wc -l
}
sd_all_running() { [ "$(sd_running)" -ge "$1" ]; }

# --------------------------------------------------------------- supervisord

# sv_setup N -> installs supervisor if needed; HAVE_SV=1 on success.
sv_setup() {
	if ! command -v supervisord >/dev/null || ! command -v supervisorctl >/dev/null; then
		log "supervisord not found: installing the Debian package 'supervisor'"
		if ! apt_install supervisor || ! command -v supervisord >/dev/null; then
			log "SKIP supervisord: could not install it (apt-get install supervisor failed or not root; see $BENCH_TMP/apt.log)"
			return 0
		fi
	fi
	HAVE_SV=1
}

# sv_start N: supervisord in the foreground (nodaemon, our child) with N
# programs 'sleep 100000', each in its own directory, not started yet.
sv_start() {
	local n=$1 d=$BENCH_TMP/supervisord i
	mkdir -p "$d/logs"
	mkprojects "$d/p" "$n"
	SV_CONF=$d/supervisord.conf
	{
		cat <<EOF
[unix_http_server]
file=$d/supervisor.sock

[supervisord]
logfile=$d/supervisord.log
pidfile=$d/supervisord.pid
childlogdir=$d/logs
nodaemon=true
minfds=1024
minprocs=200

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://$d/supervisor.sock
EOF
		for ((i = 1; i <= n; i++)); do
			printf '\n[program:p%d]\ncommand=%s 100000\ndirectory=%s/p/%d\nautostart=false\nautorestart=false\n' "$i" "$SLEEP" "$d" "$i"
		done
	} >"$SV_CONF"
	supervisord -c "$SV_CONF" >"$d/stdout.log" 2>&1 </dev/null &
	SV_PID=$!
	wait_until 20 supervisorctl -c "$SV_CONF" pid >/dev/null 2>&1 || { cat "$d/stdout.log" >&2; die "supervisord did not come up"; }
	log "supervisord $(supervisord --version) up (pid $SV_PID)"
}

sv_running() { supervisorctl -c "$SV_CONF" status 2>/dev/null | grep -c ' RUNNING ' || true; }
sv_all_running() { [ "$(sv_running)" -ge "$1" ]; }

# ----------------------------------------------------------------------- pm2

# pm2_setup -> finds or installs pm2 (npm -g, else a prefix in $BENCH_TMP); HAVE_PM2=1 on success.
pm2_setup() {
	PM2_BIN=$(command -v pm2 || true)
	if [ -z "$PM2_BIN" ]; then
		if ! command -v npm >/dev/null; then
			log "npm not found: installing the Debian package 'npm'"
			apt_install npm || true
		fi
		if command -v npm >/dev/null; then
			log "pm2 not found: npm install -g pm2"
			if as_root npm install -g pm2 >"$BENCH_TMP/npm.log" 2>&1; then
				PM2_BIN=$(command -v pm2 || true)
			else
				log "npm install -g failed; installing pm2 into $BENCH_TMP/npm"
				npm install --prefix "$BENCH_TMP/npm" pm2 >>"$BENCH_TMP/npm.log" 2>&1 &&
					PM2_BIN=$BENCH_TMP/npm/node_modules/.bin/pm2
			fi
		fi
	fi
	if [ -z "$PM2_BIN" ] || [ ! -x "$PM2_BIN" ]; then
		log "SKIP pm2: not installed and could not be installed (no npm, or npm install failed; see $BENCH_TMP/npm.log)"
		PM2_BIN=
		return 0
	fi
	HAVE_PM2=1
}

pm2c() { PM2_HOME=$PM2_HOME_DIR "$PM2_BIN" "$@"; }

# pm2_start N: pm2's God daemon in a temporary PM2_HOME, and an ecosystem file
# of N apps 'sleep 100000' (fork mode, no interpreter), each in its own dir.
pm2_start() {
	local n=$1 d=$BENCH_TMP/pm2
	PM2_HOME_DIR=$d/home
	mkdir -p "$PM2_HOME_DIR"
	mkprojects "$d/p" "$n"
	python3 - "$n" "$d" "$SLEEP" >"$d/ecosystem.json" <<'EOF'
import json, sys
n, d, sleep = int(sys.argv[1]), sys.argv[2], sys.argv[3]
print(json.dumps({"apps": [{"name": "p%d" % i, "script": sleep, "args": "100000", "interpreter": "none",
                            "cwd": "%s/p/%d" % (d, i), "autorestart": False} for i in range(1, n + 1)]}))
EOF
	pm2c ping >/dev/null 2>&1 || die "pm2 daemon did not come up"
	log "pm2 $(pm2c --version 2>/dev/null | tail -1) God daemon up (pid $(cat "$PM2_HOME_DIR/pm2.pid"))"
}

pm2_pid() { cat "$PM2_HOME_DIR/pm2.pid"; }
pm2_online() {
	# One "status" per process, in its pm2_env.
	pm2c jlist 2>/dev/null | grep -o '"status":"online"' | wc -l
}
pm2_all_online() { [ "$(pm2_online)" -ge "$1" ]; }
