#!/usr/bin/env bash
# bench/containment.sh [N] [ROUNDS]: what a cgroup per session costs, in
# interleaved runs of sessiond with cgroups off and on (default N=1000,
# ROUNDS=2): N sequential `sessionctl start`, 20 `sessionctl ps`, the
# daemon's RSS, `stop --all` with every handoff durable. Interleaving keeps
# the machine's drift (its disk latency, here) out of the comparison as far
# as it can be; each round prints both. Needs bin/ built (make build).
source "$(dirname "$0")/lib.sh"

N=${1:-1000}
ROUNDS=${2:-2}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -gt 0 ] || die "usage: $0 [N] [ROUNDS]"
bench_init

run() { # run on|off ROUND
	local dir=$BENCH_TMP/$1-$2 t0 t1 t2 t3 rss
	SD_CGROUPS=$([ "$1" = on ] && echo true || echo false) sd_start "$dir"
	mkprojects "$dir/p" "$N"
	t0=$(now_ns)
	for ((i = 1; i <= N; i++)); do
		sctl start -q "$dir/p/$i" -- "$SLEEP" 100000 >/dev/null
	done
	t1=$(now_ns)
	sleep 3
	t2=$(now_ns)
	for ((i = 0; i < 20; i++)); do sctl ps >/dev/null; done
	t3=$(now_ns)
	rss=$(rss_mib "$SD_PID")
	local s0 s1
	s0=$(now_ns)
	sctl stop --all >/dev/null 2>&1
	s1=$(now_ns)
	printf '| %s | %s | %s | %s | %s | %s |\n' "$2" "$1" \
		"$(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / n / 1e6 }')" \
		"$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.1f", (b - a) / 20 / 1e6 }')" "$rss" "$(ns_s "$s0" "$s1")"
	kill -TERM "$SD_PID" 2>/dev/null
	for _ in $(seq 1 300); do kill -0 "$SD_PID" 2>/dev/null || break; sleep 0.1; done
	SD_PID=
}

echo "| round | cgroups | start, each (ms) | ps, each (ms) | RSS (MiB) | stop --all (s) |"
echo "|---|---|---|---|---|---|"
for ((r = 1; r <= ROUNDS; r++)); do
	run off "$r"
	run on "$r"
done
