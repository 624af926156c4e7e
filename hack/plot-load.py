#!/usr/bin/env python3
"""Plots the closed loop of load-aware answers (make bench-load) as an SVG.

Reads the CSV test/e2e/health's TestLoadClosedLoop writes (a "# " line saying
what ran, then seconds,phase,cluster-1,cluster-2,cluster-3) and draws each
cluster's utilisation over time, the target at 1.0, and the moment
load-awareness was switched on. Standard library only.

    python3 hack/plot-load.py bin/load-loop.csv docs/load-loop.svg
"""
import csv
import math
import sys

W, H = 900, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 40, 50
COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]


def main(src, dst):
    with open(src) as f:
        lines = f.read().splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else ""
    rows = list(csv.reader(l for l in lines if not l.startswith("#")))
    header, rows = rows[0], rows[1:]
    clusters = header[2:]
    t = [float(r[0]) for r in rows]
    phase = [r[1] for r in rows]
    series = [[float(r[2 + i]) if r[2 + i] not in ("", "NaN") else math.nan for r in rows] for i in range(len(clusters))]
    tmax = max(t) if t else 1
    umax = max(1.5, max((u for s in series for u in s if not math.isnan(u)), default=1) * 1.1)

    def x(v):
        return LEFT + (W - LEFT - RIGHT) * v / tmax

    def y(v):
        return TOP + (H - TOP - BOTTOM) * (1 - v / umax)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="13">Utilisation of each cluster (1.0 = target): {esc(title)}</text>']
    # Axes and grid.
    for i in range(int(umax / 0.25) + 1):
        v = i * 0.25
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    step = 10 if tmax <= 120 else 30
    for s in range(0, int(tmax) + 1, step):
        out.append(f'<text x="{x(s):.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">seconds</text>')
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="black" stroke-dasharray="6,4"/>')
    out.append(f'<text x="{W - RIGHT + 6}" y="{y(1) + 4:.1f}">target</text>')
    on = next((t[i] for i, p in enumerate(phase) if p == "on"), None)
    if on is not None:
        out.append(f'<line x1="{x(on):.1f}" x2="{x(on):.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#888"/>')
        out.append(f'<text x="{x(on) + 4:.1f}" y="{TOP + 12}" fill="#555">load-awareness on</text>')
        out.append(f'<text x="{x(0) + 4:.1f}" y="{TOP + 12}" fill="#555">off</text>')
    for i, name in enumerate(clusters):
        pts, segs = [], []
        for tv, u in zip(t, series[i]):
            if math.isnan(u):
                if pts:
                    segs.append(pts)
                pts = []
                continue
            pts.append(f"{x(tv):.1f},{y(u):.1f}")
        if pts:
            segs.append(pts)
        c = COLOURS[i % len(COLOURS)]
        for p in segs:
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{" ".join(p)}"/>')
        ly = TOP + 40 + 18 * i
        out.append(f'<line x1="{W - RIGHT + 6}" x2="{W - RIGHT + 26}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{W - RIGHT + 30}" y="{ly + 4}">{esc(name)}</text>')
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot-load.py SAMPLES.csv OUT.svg")
    main(sys.argv[1], sys.argv[2])
