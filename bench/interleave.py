#!/usr/bin/env python3
"""interleave.py RUNS LABEL=COMMAND... : whole-process wall times, interleaved.

Each round runs every command once, in an order shuffled anew each round
(no command always follows the same one), and the rounds repeat RUNS
times (after three rounds of warm-up), so that a machine that speeds up
or slows down meanwhile (a shared host, another tenant) moves every
command alike. The first command is the floor: beside each other
command's median and p90 comes its ratio to the floor's median, and the
median over the rounds of the ratio of the two in that round.

Prints one line a command: LABEL MEDIAN_MS P90_MS RATIO PAIRED_RATIO.
A COMMAND is split as a shell would (shlex), runs with stdin, stdout and
stderr on /dev/null, and is timed from its spawn to its reaping.
"""
import math
import os
import random
import shlex
import statistics
import sys
import time


def run(argv):
    fa = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=fa)
    os.waitpid(pid, 0)
    return (time.perf_counter_ns() - t0) / 1e6


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    cmds = []
    for arg in sys.argv[2:]:
        label, sep, cmd = arg.partition("=")
        if not sep or not cmd:
            sys.exit("interleave.py: %r is not LABEL=COMMAND" % arg)
        cmds.append((label, shlex.split(cmd)))
    times = {label: [] for label, _ in cmds}
    rng = random.Random(31)
    for r in range(runs + 3):
        order = list(cmds)
        rng.shuffle(order)
        for label, argv in order:
            t = run(argv)
            if r >= 3:
                times[label].append(t)
    floor = cmds[0][0]
    fmed = statistics.median(times[floor])
    for label, _ in cmds:
        xs = times[label]
        med = statistics.median(xs)
        paired = statistics.median(x / f for x, f in zip(xs, times[floor]))
        print("%s %.2f %.2f %.2f %.2f" % (label, med, pct(xs, 90), med / fmed, paired))


if __name__ == "__main__":
    main()
