#!/usr/bin/env bash
# bench/terminal.sh [N] [SECONDS]: terminal sessions through the daemon
# (DESIGN.md §7: a holder per tty session ≤ 3 MiB RSS, no CPU when idle).
#
#   1. N (default 20) idle terminal sessions (a shell that printed a line
#      and waits): each holder's RSS, PSS and anonymous memory once it has
#      settled (SETTLE, default 22 seconds: its compaction runs 10 to 20 s
#      after the last output or request to it), and the CPU
#      all holders and the daemon use over SECONDS (default 10) of idleness;
#      beside them the floor, a Go process that only sleeps. Then the RSS
#      again LONG_IDLE (default 150) seconds after the last output, past the
#      Go runtime's periodic collection (two minutes after the last one);
#      LONG_IDLE=0 skips it.
#   2. Output throughput: `yes` writing BYTES (default 64 MiB) on a
#      terminal session, against the same command on a pty that script(1)
#      reads (the ceiling of any terminal), on one whose output script(1)
#      also writes to a file (the ceiling of a terminal that keeps a log, as
#      the holder does), in a plain session (through the log keeper) and
#      straight to a file: the writer's own time, and for sessions start to
#      ended too; the median of ROUNDS (default 11: a single round's ratio
#      moves by a quarter on a shared 2-core host), the terminal session's
#      ratio to the mean of the ceiling's runs just before and just after it
#      in each round, and to the logging ceiling's run of that round.
#   3. Attach latency through the daemon: from the dial of the daemon's
#      socket to the end of the first repaint of a full 120x40 screen,
#      median and p90 over RUNS (default 50) read-only attaches.
source "$(dirname "$0")/lib.sh"

N=${1:-20}
SECS=${2:-10}
BYTES=${BYTES:-$((64 << 20))}
RUNS=${RUNS:-50}

bench_init
sd_start
HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
holder_pid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["holder_pid"])' "$SD_DIR/state/sessions/$1/holder.json"; }
# mem PID -> "rss pss anon" in KiB
mem() { awk '/^(Rss|Pss|Anonymous):/ { v[$1] = $2 } END { print v["Rss:"], v["Pss:"], v["Anonymous:"] }' "/proc/$1/smaps_rollup"; }

# ---------------------------------------------------------- 1. idle holders
mkprojects "$SD_DIR/p" "$N"
IDS=()
for ((i = 1; i <= N; i++)); do
	IDS+=("$(sctl start -q --tty "$SD_DIR/p/$i" -- /bin/sh -c 'echo ready; read x')")
done
wait_until 60 sd_all_running "$N" || die "not all $N terminal sessions running"
for id in "${IDS[@]}"; do wait_until 20 sh -c "'$BIN/sessionctl' --socket '$SD_SOCK' screen $id | grep -q ready"; done
log "$N terminal sessions running; letting the holders settle"
# A holder's compaction is armed for 10 s and, if output or a request came
# meanwhile, once more: it runs 10 to 20 s after the last of them (the
# screens read just above among them).
SETTLE=${SETTLE:-22}
sleep "$SETTLE"
HOLDERS=()
for id in "${IDS[@]}"; do HOLDERS+=("$(holder_pid "$id")"); done
read -r rss pss anon maxrss < <(for p in "${HOLDERS[@]}"; do mem "$p"; done |
	awk '{ r += $1; p += $2; a += $3; if ($1 > m) m = $1 } END { printf "%d %d %d %d\n", r / NR, p / NR, a / NR, m }')
t0=0; for p in "${HOLDERS[@]}"; do t0=$((t0 + $(ticks "$p"))); done
d0=$(ticks "$SD_PID")
sleep "$SECS"
t1=0; for p in "${HOLDERS[@]}"; do t1=$((t1 + $(ticks "$p"))); done
d1=$(ticks "$SD_PID")
cpu() { awk -v t="$1" -v hz="$HZ" -v s="$SECS" 'BEGIN { printf "%.2f", t / hz / s * 100 }'; }
printf '\n%d idle terminal sessions (80x24):\n' "$N"
printf '  holder RSS  %.2f MiB average, %.2f MiB at most\n' "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$maxrss" 'BEGIN { print k / 1024 }')"
printf '  holder PSS  %.2f MiB, anonymous %.2f MiB\n' "$(awk -v k="$pss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$anon" 'BEGIN { print k / 1024 }')"
printf '  CPU over %ss: all holders %s %% of one core, the daemon %s %%\n' "$SECS" "$(cpu $((t1 - t0)))" "$(cpu $((d1 - d0)))"
printf '  daemon RSS  %s MiB\n' "$(rss_mib "$SD_PID")"
LONG_IDLE=${LONG_IDLE:-150}
if ((LONG_IDLE > 0)); then
	sleep $((LONG_IDLE > SETTLE + SECS ? LONG_IDLE - SETTLE - SECS : 0))
	read -r rss pss anon maxrss < <(for p in "${HOLDERS[@]}"; do mem "$p"; done |
		awk '{ r += $1; p += $2; a += $3; if ($1 > m) m = $1 } END { printf "%d %d %d %d\n", r / NR, p / NR, a / NR, m }')
	printf '  holder RSS  %.2f MiB average, %.2f MiB at most, %ss after the last output (PSS %.2f MiB, anonymous %.2f MiB)\n' \
		"$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$maxrss" 'BEGIN { print k / 1024 }')" "$LONG_IDLE" \
		"$(awk -v k="$pss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$anon" 'BEGIN { print k / 1024 }')"
fi
# The floor of any holder: a Go process that only sleeps, built as sessiond
# is (no cgo, stripped), measured the same way.
mkdir -p "$BENCH_TMP/sleeper"
printf 'package main\n\nimport "time"\n\nfunc main() { time.Sleep(time.Hour) }\n' >"$BENCH_TMP/sleeper/main.go"
if (cd "$BENCH_TMP/sleeper" && printf 'module sleeper\n\ngo 1.22\n' >go.mod && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o sleeper .); then
	"$BENCH_TMP/sleeper/sleeper" &
	sp=$!
	sleep 2
	read -r srss spss sanon < <(mem "$sp")
	kill "$sp"; wait "$sp" 2>/dev/null || true
	printf '  the floor, a Go process that only sleeps: RSS %.2f MiB, PSS %.2f MiB, anonymous %.2f MiB\n' \
		"$(awk -v k="$srss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$spss" 'BEGIN { print k / 1024 }')" "$(awk -v k="$sanon" 'BEGIN { print k / 1024 }')"
fi
sctl stop --all --grace 0s >/dev/null

# ------------------------------------------------------------ 2. throughput
# Each way runs the same command, which notes its own clock before the first
# byte and after the last (the time the writer took: a terminal holds a few
# KiB, so it writes at the speed of its reader); sessions are also timed
# from the start to the end on disk. ROUNDS rounds, the ways alternating,
# medians printed.
ROUNDS=${ROUNDS:-11}
YES="yes 'the quick brown fox jumps over the lazy dog' | head -c $BYTES"
mkdir -p "$SD_DIR/t"
MARK="$SD_DIR/t/mark"
# A session's command tells its times through a FIFO the bench waits on
# without polling: a poll loop's processes would take CPU from the very
# writer being timed, which script(1)'s run, in the foreground, is spared.
FIFO="$SD_DIR/t/mark.fifo"
mkfifo "$FIFO"
exec 3<>"$FIFO"
# timed [REDIRECT [MARK]] -> the command, writing to REDIRECT if given and
# its times to MARK (default $MARK)
timed() { printf 'a=$(date +%%s%%N); %s %s; b=$(date +%%s%%N); echo "$a $b" > %s' "$YES" "${1:-}" "${2:-$MARK}"; }
TIMED=$(timed)
child_s() { local a b; read -r a b < "$MARK"; rm -f "$MARK"; ns_s "$a" "$b"; }
# run_session FLAGS... -> "child-seconds start-to-end-seconds"
run_session() {
	local a b id
	a=$(now_ns)
	id=$(sctl start -q "$@" "$SD_DIR/t" -- /bin/sh -c "$(timed "" "$FIFO")")
	# The times come first, at the writer's end; inspect is polled only
	# then.
	local ca cb
	read -r -t 600 -u 3 ca cb || die "no times from session $id"
	wait_until 600 sh -c "'$BIN/sessionctl' --socket '$SD_SOCK' inspect $id | grep -q '\"state\": \"ended\"'"
	b=$(now_ns)
	echo "$(ns_s "$ca" "$cb") $(ns_s "$a" "$b")"
}
declare -a T_FILE T_PTY T_PTYLOG T_PLAIN T_PLAIN_E T_TTY T_TTY_E RATIO RATIO_LOG ROUND
# The ceiling of any terminal: script(1) reading the pty as fast as it can
# and throwing the output away.
ceiling() { script -qc "$TIMED" /dev/null >/dev/null; child_s; }
# The ceiling of a terminal that keeps its output: script(1) writing what it
# reads to a file too (its typescript), as the holder writes the session's
# log.
ceiling_log() { script -qc "$TIMED" "$SD_DIR/t/typescript" >/dev/null; rm -f "$SD_DIR/t/typescript"; child_s; }
for ((r = 0; r < ROUNDS; r++)); do
	/bin/sh -c "$(timed "> $SD_DIR/t/direct.out")"; T_FILE+=("$(child_s)")
	# The terminal session between two runs of its ceiling, its ratio to
	# their mean: the machine's speed drifts between rounds, and within
	# one, more than a terminal's cost does.
	p1=$(ceiling)
	read -r c e < <(run_session --tty); T_TTY+=("$c"); T_TTY_E+=("$e")
	p2=$(ceiling)
	T_PTY+=("$p1" "$p2")
	ROUND+=("$p1/$c/$p2")
	RATIO+=("$(awk -v a="$p1" -v b="$p2" -v t="$c" 'BEGIN { printf "%.1f", (a + b) / 2 / t * 100 }')")
	l=$(ceiling_log); T_PTYLOG+=("$l")
	RATIO_LOG+=("$(awk -v a="$l" -v t="$c" 'BEGIN { printf "%.1f", a / t * 100 }')")
	read -r c e < <(run_session); T_PLAIN+=("$c"); T_PLAIN_E+=("$e")
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mbs() { awk -v n="$BYTES" -v s="$1" 'BEGIN { printf "%.0f", n / s / 1e6 }'; }
f=$(med "${T_FILE[@]}"); p=$(med "${T_PTY[@]}"); pg=$(med "${T_PTYLOG[@]}")
pl=$(med "${T_PLAIN[@]}"); ple=$(med "${T_PLAIN_E[@]}")
t=$(med "${T_TTY[@]}"); te=$(med "${T_TTY_E[@]}")
printf '\nthroughput of %d MiB of yes, the writer'"'"'s own time, median of %d rounds:\n' $((BYTES >> 20)) "$ROUNDS"
printf '  straight to a file            %6s s  %5s MB/s\n' "$f" "$(mbs "$f")"
printf '  a pty read by script(1)       %6s s  %5s MB/s (the ceiling of a terminal)\n' "$p" "$(mbs "$p")"
printf '  the same, script(1) logging   %6s s  %5s MB/s (the ceiling of a terminal that keeps a log)\n' "$pg" "$(mbs "$pg")"
printf '  plain session (keeper)        %6s s  %5s MB/s; start to ended %s s\n' "$pl" "$(mbs "$pl")" "$ple"
printf '  terminal session (holder)     %6s s  %5s MB/s; start to ended %s s\n' "$t" "$(mbs "$t")" "$te"
printf '  terminal session / pty ceiling (its runs before and after), each round: %s %%; median %s %%\n' "${RATIO[*]}" "$(med "${RATIO[@]}")"
printf '  each round, the ceiling before / the terminal session / the ceiling after (s): %s\n' "${ROUND[*]}"
printf '  terminal session / the logging ceiling, each round: %s %%; median %s %%\n' "${RATIO_LOG[*]}" "$(med "${RATIO_LOG[@]}")"

# ------------------------------------------------------------ 3. attach latency
mkdir -p "$SD_DIR/a"
id=$(sctl start -q --tty "$SD_DIR/a" -- /bin/sh -c \
	'read go; i=0; while [ $i -lt 60 ]; do printf "\033[3%dmline %d of a full screen of coloured text\033[0m\n" $((i % 7)) $i; i=$((i+1)); done; echo READY; read x')
wait_until 20 sctl screen "$id" >/dev/null
python3 - "$SD_SOCK" "$id" "$RUNS" <<'EOF'
import socket, struct, sys, time, statistics, math
sock, sid, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def frame(t, p):
    return t + struct.pack(">I", len(p)) + p
def attach(read_only=True, setup=None):
    t0 = time.perf_counter()
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    q = "?read_only=1" if read_only else ""
    s.sendall(("GET /v1/sessions/%s/attach%s HTTP/1.1\r\nHost: sessiond\r\n"
               "Connection: Upgrade\r\nUpgrade: sessiond-term\r\n\r\n" % (sid, q)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, buf = buf.split(b"\r\n\r\n", 1)
    assert b" 101 " in head.split(b"\r\n")[0], head
    if setup:
        s.sendall(setup)
    seen = b""
    while b"READY" not in seen:
        while len(buf) < 5:
            buf += s.recv(65536)
        typ, n = buf[0:1], struct.unpack(">I", buf[1:5])[0]
        while len(buf) < 5 + n:
            buf += s.recv(65536)
        if typ == b"d":
            seen += buf[5:5 + n]
        buf = buf[5 + n:]
    t = time.perf_counter() - t0
    if setup:
        s.sendall(frame(b"q", b""))
    s.close()
    return t
# The writer sizes the terminal to 120x40 and lets the screen be drawn.
attach(False, frame(b"r", struct.pack(">HH", 120, 40)) + frame(b"d", b"\r"))
for _ in range(3):
    attach()
xs = sorted(attach() for _ in range(runs))
p90 = xs[max(0, math.ceil(0.9 * len(xs)) - 1)]
print("\nattach through the daemon, dial to the end of the first repaint (120x40, %d runs):" % runs)
print("  median %.2f ms, p90 %.2f ms" % (statistics.median(xs) * 1e3, p90 * 1e3))
EOF
sctl stop --all --grace 0s >/dev/null
