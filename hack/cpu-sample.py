#!/usr/bin/env python3
"""Samples /proc every 2 s until SIGTERM or Ctrl-C, then writes where the
CPU went: CPU-seconds per command name, and per test binary with every
process it started (a process counts under the nearest *.test ancestor;
"-" is everything else), within the window only, the share of the
machine that was busy, and that share for each 30 s of the window (where
a run leaves cores idle). BENCHMARKS.md, "The test loop":

    python3 hack/cpu-sample.py cpu.txt & bash .ci/run; kill %1
"""
import collections
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def machine():
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v), v[3] + v[4]  # all, idle + iowait


def processes():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue  # gone meanwhile
        r = s.rfind(")")
        comm, f = s[s.find("(") + 1:r], s[r + 2:].split()
        out[pid] = (comm, f[1], f[19], (int(f[11]) + int(f[12])) / TICK)
    return out


def is_test(comm):
    # Command names are cut at 15 characters: "deployments.tes".
    return ".tes" in comm or comm.endswith(".t")


def owner(pid, procs):
    for _ in range(20):
        if pid not in procs:
            return "-"
        if is_test(procs[pid][0]):
            return procs[pid][0]
        pid = procs[pid][1]
    return "-"


def main(out):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    all0, idle0 = machine()
    start = time.time()
    last = {}  # (pid, start time): (comm, CPU-s so far, owner)
    # What the processes running already had used before the window.
    base = {(pid, p[2]): p[3] for pid, p in processes().items()}
    timeline, mark = [], (start, all0, idle0)
    while not stop:
        procs = processes()
        for pid, (comm, _, started, cpu) in procs.items():
            last[(pid, started)] = (comm, cpu, owner(pid, procs))
        time.sleep(2)
        if time.time() - mark[0] >= 30:
            a, i = machine()
            timeline.append(1 - (i - mark[2]) / max(a - mark[1], 1))
            mark = (time.time(), a, i)
    all1, idle1 = machine()
    by_comm, by_test = collections.Counter(), collections.Counter()
    for key, (comm, cpu, test) in last.items():
        by_comm[comm] += cpu - base.get(key, 0)
        by_test[test] += cpu - base.get(key, 0)
    with open(out, "w") as f:
        f.write(f"wall {time.time() - start:.0f} s, busy {1 - (idle1 - idle0) / (all1 - all0):.3f}\n")
        f.write("busy by 30 s: " + " ".join(f"{b:.2f}" for b in timeline) + "\n")
        for k, v in by_comm.most_common(30):
            f.write(f"{v:9.1f} {k}\n")
        f.write("--- by test binary, with what it started\n")
        for k, v in by_test.most_common(40):
            f.write(f"{v:9.1f} {k}\n")


if __name__ == "__main__":
    main(sys.argv[1])
