#!/usr/bin/env python3
"""RSS window of scripts/bench/scale.sh --for: campaign members' memory
while every cell of the campaign is active.

  rss_window.py sample CAMPDIR CELLS WINDOW EVERY OUT PID...
      waits until CELLS cells have started (each has a run dir with its
      coordinator.lock), then every EVERY seconds for WINDOW seconds
      writes one line to OUT: seconds into the window, cells started,
      per-cell counts of the training steps decided (events.jsonl "step"
      events, min and max), and VmRSS and VmHWM (KiB) of each PID. It
      returns early, saying so, when a member process ends.
  rss_window.py report OUT CELLS
      prints the window's figures for scale.sh's row.

A window, not the whole run: a cell of a paper-scale preset runs for hours
on a small machine, and RSS "per active run" needs every cell active at
once, so the campaign is stopped at the window's end instead of finishing.
"""
import glob
import json
import os
import re
import sys
import time


def seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text)
    if not m:
        sys.exit("rss_window.py: --for %r: want a duration such as 90s, 15m or 1h" % text)
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def status(pid):
    """VmRSS and VmHWM of pid in KiB, or None once it has ended."""
    try:
        text = open("/proc/%d/status" % pid).read()
    except OSError:
        return None
    got = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", text, re.M))
    if "VmRSS" not in got:
        return None  # a zombie
    return int(got["VmRSS"]), int(got["VmHWM"])


def cells(campdir):
    """Run dirs of the cells started so far."""
    return [os.path.dirname(p) for p in glob.glob(os.path.join(campdir, "cells", "*", "coordinator.lock"))]


def steps(dirs):
    """Training steps decided by each cell (its events.jsonl's step events)."""
    out = []
    for d in dirs:
        n = 0
        try:
            with open(os.path.join(d, "events.jsonl"), "rb") as f:
                for line in f:
                    if b'"type":"step"' in line:
                        n += 1
        except OSError:
            pass
        out.append(n)
    return out


def sample(campdir, ncells, window, every, out, pids):
    ncells, window, every = int(ncells), seconds(window), seconds(every)
    pids = [int(p) for p in pids]
    while len(cells(campdir)) < ncells:
        if any(status(p) is None for p in pids):
            print("rss_window.py: a campaign member ended before all %d cells started" % ncells, file=sys.stderr)
            return 1
        time.sleep(0.5)
    start = time.monotonic()
    with open(out, "w") as f:
        f.write("t_s\tcells\tsteps_min\tsteps_max" + "".join("\trss%d_kib\thwm%d_kib" % (i, i) for i in range(1, len(pids) + 1)) + "\n")
        while True:
            t = time.monotonic() - start
            st = [status(p) for p in pids]
            if any(s is None for s in st):
                print("rss_window.py: a campaign member ended %.0f s into the %.0f s window" % (t, window), file=sys.stderr)
                return 0
            dirs = cells(campdir)
            s = steps(dirs) or [0]
            f.write("%.1f\t%d\t%d\t%d%s\n" % (t, len(dirs), min(s), max(s), "".join("\t%d\t%d" % x for x in st)))
            f.flush()
            if t >= window:
                return 0
            time.sleep(max(0.0, min(every, window - t)))


def report(path, ncells):
    ncells = int(ncells)
    rows = [line.rstrip("\n").split("\t") for line in open(path)][1:]
    if not rows:
        sys.exit("rss_window.py: no sample in %s" % path)
    rows = [[float(x) for x in r] for r in rows]
    mib = 1024.0
    rss = [sum(r[4::2]) / mib for r in rows]  # summed over the members
    t = [r[0] for r in rows]

    def at(frac):
        # The sample nearest to that fraction of the window.
        goal = t[-1] * frac
        i = min(range(len(t)), key=lambda i: abs(t[i] - goal))
        return rss[i] / ncells

    # Least-squares slope of the summed RSS over the window, per run.
    n = len(t)
    slope = 0.0
    if n > 1:
        mt, mr = sum(t) / n, sum(rss) / n
        den = sum((x - mt) ** 2 for x in t)
        if den:
            slope = sum((x - mt) * (y - mr) for x, y in zip(t, rss)) / den * 60 / ncells
    hwm = sum(rows[-1][5::2]) / mib  # each member's own peak, summed
    print(json.dumps({
        "window_s": round(t[-1]), "samples": n,
        "steps_start": [int(rows[0][2]), int(rows[0][3])], "steps_end": [int(rows[-1][2]), int(rows[-1][3])],
        "rss_third": at(1 / 3), "rss_two_thirds": at(2 / 3), "rss_end": at(1.0),
        "peak_sum": max(rss), "hwm_sum": hwm, "hwm_per_run": hwm / ncells, "slope": slope,
    }))


if __name__ == "__main__":
    if len(sys.argv) >= 7 and sys.argv[1] == "sample":
        sys.exit(sample(*sys.argv[2:6], sys.argv[6], sys.argv[7:]))
    if len(sys.argv) == 4 and sys.argv[1] == "report":
        report(*sys.argv[2:])
        sys.exit(0)
    sys.exit(__doc__)
