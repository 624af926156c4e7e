#!/usr/bin/env python3
"""Simulates the closed loop of load-aware answers (TestLoadClosedLoop) in
virtual time, to choose how answers are drawn without a test bed.

The model, as the e2e test runs it: steady clients in SUBNETS subnets send
RATE requests a second in all, each resolved through a resolver that caches
one answer per subnet for a TTL (expiries spread, as a running population's
are), at three clusters whose load balancers hold each request 100 ms and
report their requests in flight over their capacity (4, 8, 16), averaged over
a second; a checker reads that every second into an exponentially weighted
average (alpha 0.5), publishes it in buckets of 0.02 with half a bucket of
hysteresis every load interval, and the weights are policy/load's: 100 x
headroom, shed at 1. Each run prints every cluster's mean utilisation after
SETTLE seconds, and the lowest and highest of its averages over windows of a
TTL (the test's "TTL averages").

Draws: "fresh" is a weighted random draw each time a subnet's answer expires
(the plugin before subnets had draws of their own); "sticky" is the plugin's
(proximity.OrderFor): a weighted rendezvous of the subnet with each cluster.
--damp S also moves the weights toward their target with a time constant of
S seconds; --hold S changes them at most every S seconds, --beta B a part B
of the way each time.

    hack/sim-load-loop.py                 # fresh and sticky, 3 seeds each
    hack/sim-load-loop.py --draw sticky --damp 5
"""

import argparse
import hashlib
import math
import random

CAPACITIES = (4, 8, 16)
SERVICE = 0.1  # seconds a request is held
STEP = 0.01  # the simulation's tick, seconds


def run(draw, rate, subnets, ttl, seconds, seed, damp=0.0, hold=0.0, beta=1.0, interval=1.0, alpha=0.5):
    rnd = random.Random(seed)
    n = len(CAPACITIES)
    per = subnets / rate  # seconds between one subnet's requests
    next_request = [rnd.random() * per for _ in range(subnets)]
    # Answers expire at times spread over a TTL, as a running population's
    # do (expiries in step would move every subnet at once).
    expires = [ttl * rnd.random() for _ in range(subnets)]
    inflight = [[] for _ in range(n)]
    ring = [[0.0] * int(1 / STEP) for _ in range(n)]  # in-flight integral, the last second
    slot = 0
    average = [None] * n
    bucket = [-1] * n
    target = [100.0] * n  # policy/load's weights
    weights = [100.0] * n  # what the plugin answers with
    shed = [False] * n
    next_probe, next_publish, next_sample, changed = 0.3, 0.6, 0.0, -hold
    samples = []
    hashes = [[int.from_bytes(hashlib.blake2b(b"%d/%d" % (s, c), digest_size=8).digest(), "big") for c in range(n)]
              for s in range(subnets)]

    def pick(s):
        w = [0.0 if shed[i] else max(1.0, round(weights[i])) for i in range(n)]
        if draw == "sticky":
            times = [-math.log((hashes[s][i] + 0.5) / 2**64) / w[i] if w[i] > 0 else math.inf for i in range(n)]
            return times.index(min(times))
        x = rnd.random() * sum(w)
        for i in range(n):
            x -= w[i]
            if x < 0:
                return i
        return n - 1

    answer = [pick(s) for s in range(subnets)]

    def utilisation(i):
        return sum(ring[i]) / CAPACITIES[i]

    for tick in range(int(seconds / STEP)):
        t = tick * STEP
        for s in range(subnets):
            while next_request[s] <= t:
                if expires[s] <= t:
                    answer[s], expires[s] = pick(s), t + ttl
                inflight[answer[s]].append(t + SERVICE)
                next_request[s] += per * (0.9 + 0.2 * rnd.random())
        for i in range(n):
            inflight[i] = [end for end in inflight[i] if end > t]
            ring[i][slot] = len(inflight[i]) * STEP
        slot = (slot + 1) % len(ring[0])
        if t >= next_probe:
            next_probe += 1.0
            for i in range(n):
                u = utilisation(i)
                average[i] = u if average[i] is None else alpha * u + (1 - alpha) * average[i]
        if t >= next_publish:
            next_publish += interval
            for i in range(n):
                k = average[i] / 0.02
                if not (bucket[i] >= 0 and bucket[i] - 0.5 <= k < bucket[i] + 1.5):
                    bucket[i] = min(int(k + 1e-9), 100)
            if t - changed >= hold:
                changed = t
                room = [max(0.0, min(1.0, 1 - round((b + 0.5) * 0.02, 3))) for b in bucket]
                if any(h > 0 for h in room):
                    for i in range(n):
                        shed[i] = room[i] == 0
                        want = max(1.0, round(100 * room[i])) if room[i] > 0 else 0.0
                        target[i] = want if want == 0 or target[i] == 0 else target[i] + beta * (want - target[i])
        f = 1 - math.exp(-STEP / damp) if damp > 0 else 1.0
        weights = [w + (g - w) * f if g > 0 and w > 0 else g for w, g in zip(weights, target)]
        if t >= next_sample:
            next_sample += 0.5
            samples.append((t, [utilisation(i) for i in range(n)]))
    return samples


def summary(samples, settle, ttl):
    after = [u for t, u in samples if t >= settle]
    out = []
    for i in range(len(CAPACITIES)):
        column = [u[i] for u in after]
        w = int(2 * ttl)  # samples every half second
        windows = [sum(column[j:j + w]) / w for j in range(0, len(column) - w + 1, w)]
        out.append("%.2f (%.2f-%.2f)" % (sum(column) / len(column), min(windows), max(windows)))
    return "  ".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--draw", choices=("fresh", "sticky"), action="append")
    p.add_argument("--rate", type=float, default=150)
    p.add_argument("--subnets", type=int, default=128)
    p.add_argument("--ttl", type=float, default=5)
    p.add_argument("--seconds", type=float, default=150)
    p.add_argument("--settle", type=float, default=20)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--damp", type=float, default=0)
    p.add_argument("--hold", type=float, default=0)
    p.add_argument("--beta", type=float, default=1)
    a = p.parse_args()
    print("capacities %s, %g requests/s from %d subnets, TTL %gs; mean (TTL averages) after %gs"
          % (CAPACITIES, a.rate, a.subnets, a.ttl, a.settle))
    for draw in a.draw or ["fresh", "sticky"]:
        for seed in range(1, a.seeds + 1):
            s = run(draw, a.rate, a.subnets, a.ttl, a.seconds, seed, a.damp, a.hold, a.beta)
            print("%-6s seed %d: %s" % (draw, seed, summary(s, a.settle, a.ttl)), flush=True)


if __name__ == "__main__":
    main()
