#!/usr/bin/env bash
# bench/gitstart.sh [N] [ROUNDS] — sequential `sessionctl start` where agents
# run: in git repositories. Each round, on a fresh daemon: N starts in empty
# directories, N in small repositories (two directories, one commit each),
# and N in one clone of REPO (default: this repository; the sessions
# concurrent there, `concurrent = true`). A start in a repository waits for
# git (its recent log for context.md, and the watch's view of the ignore
# rules), which a start in an empty directory does not. Prints each round's
# median start, and the median of the rounds.
#
# BIN=DIR takes sessiond and sessionctl from DIR (default: bin/), to compare
# two builds round by round.
source "$(dirname "$0")/lib.sh"

N=${1:-60}
ROUNDS=${2:-3}
REPO=${REPO:-$ROOT}
BIN=${BIN:-$ROOT/bin}
command -v git >/dev/null || die "git is needed"

bench_init

# start_each DIR...: one sessionctl start in each DIR, in turn, each timed;
# prints the median start in ms (a start that meets the kernel's writeback
# or a collection is an outlier, not the figure).
start_each() {
	local t0 t1 times=()
	for d in "$@"; do
		t0=$(now_ns)
		sctl start -q "$d" -- "$SLEEP" 100000 >/dev/null
		t1=$(now_ns)
		times+=($((t1 - t0)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", ((NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1e6 }'
}

declare -a plain small clone
for r in $(seq "$ROUNDS"); do
	W=$BENCH_TMP/round$r
	mkdir -p "$W/plain" "$W/small"
	dirs=() repos=() clones=()
	for i in $(seq "$N"); do
		mkdir "$W/plain/$i"
		dirs+=("$W/plain/$i")
		g=$W/small/$i
		mkdir -p "$g/src" "$g/docs"
		echo 'package main' >"$g/src/main.go"
		echo '# notes' >"$g/docs/notes.md"
		git -C "$g" init -q
		git -C "$g" add -A
		git -C "$g" -c user.name=bench -c user.email=bench@example.com commit -q -m one
		repos+=("$g")
	done
	git clone -q "$REPO" "$W/clone"
	printf '[session]\nconcurrent = true\n' >"$W/clone/sessiond.toml"
	for i in $(seq "$N"); do clones+=("$W/clone"); done
	# What the set-up wrote goes to disk before anything is timed.
	sync
	sd_start "$W/sessiond"
	sleep 2
	plain+=("$(start_each "${dirs[@]}")")
	small+=("$(start_each "${repos[@]}")")
	clone+=("$(start_each "${clones[@]}")")
	log "round $r: $N starts, ms a start: empty directories ${plain[-1]}, small repositories ${small[-1]}, clones of $(basename "$REPO") ${clone[-1]}"
	sctl stop --all >/dev/null
	kill "$SD_PID"
	wait "$SD_PID" 2>/dev/null || true
	SD_PID=
done

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
dirs_in=$(find "$REPO" -type d -not -path '*/.git*' | wc -l)
echo
echo "## bench/gitstart.sh $N $ROUNDS — $(date -u '+%Y-%m-%d %H:%M') UTC, $(uname -sr), $(nproc) CPUs"
echo
echo "| sequential \`sessionctl start\`, whole process, median ms (of $ROUNDS rounds' medians; each round's) | |"
echo "|---|---|"
echo "| empty directories | $(median "${plain[@]}") (${plain[*]}) |"
echo "| small git repositories (2 directories, 1 commit) | $(median "${small[@]}") (${small[*]}) |"
echo "| one clone of $(basename "$REPO") ($dirs_in directories), concurrent sessions | $(median "${clone[@]}") (${clone[*]}) |"
