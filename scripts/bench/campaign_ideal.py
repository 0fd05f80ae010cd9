#!/usr/bin/env python3
"""The ideal wall time of a finished campaign's own call graph at a given
fleet size (see docs/performance.md, "Campaign scale-out").

    campaign_ideal.py CAMPAIGN_DIR --latency 0.5 --target-slots 192 \
        --optimizer-slots 128 [--wall SECONDS]

Each cell's call graph is read back from its waves.jsonl: waves whose
intervals overlapped form one group (they were independent of each other),
and each group depends on the one before it. One exception: a critical
wave that started a latency or more after its group's first critical wave
started was waiting on that wave's results (a merge the trainer streams
as soon as its analysts' patches are in), so it begins the next group.
With it every run of the same decisions reads back the same number of
groups, however its waves' timings overlapped. The script prints three
figures:

- chain: the longest cell's chain at unlimited concurrency (one latency per
  group and class), a lower bound;
- capacity: every task of the campaign packed into the slots, a lower bound;
- schedule: an event-driven replay of all cells' graphs on exactly the
  fleet's slots with zero overhead: every call takes the latency and a free
  slot takes a critical-path task before a bulk one (baseline and test
  evaluations); among those, two greedy orders are tried (first ready
  first, and most chain left first) and the shorter wins. This is the wall
  a dispatcher without overhead reaches on this graph at this
  concurrency: the "ideal" the campaign's wall is compared with.
"""
import argparse
import heapq
import json
import os

BULK = {"baseline", "test_baseline", "test_best", "test_final", "test", "eval"}


def cell_groups(path, lat):
    """The cell's chain of groups: a list of {class: tasks, "bulk": bool}."""
    waves = [json.loads(l) for l in open(path) if l.strip()]
    waves.sort(key=lambda w: w["start_ms"])
    groups, end_ms, first = [], None, None
    for w in waves:
        ran = w.get("ran", w["tasks"])
        if ran == 0:
            continue
        bulk = w["stage"] in BULK
        waited = first is not None and not bulk and w["start_ms"] - first >= 0.9 * lat * 1000
        if end_ms is None or w["start_ms"] >= end_ms or waited:
            groups.append({"target": 0, "optimizer": 0, "bulk": True})
            end_ms, first = w["end_ms"], None
        g = groups[-1]
        g[w["class"]] = g.get(w["class"], 0) + ran
        g["bulk"] = g["bulk"] and bulk
        if not bulk and first is None:
            first = w["start_ms"]
        end_ms = max(end_ms, w["end_ms"])
    return groups


def replay(cells, lat, slots, policy):
    """Wall time of a greedy schedule of all cells: a free slot takes a
    critical task before a bulk one, then by policy: "fifo" (the group that
    became ready first) or "chain" (the cell with the most work left on its
    chain)."""
    # remaining[c][i]: latencies left on cell c's chain from group i on.
    remaining = []
    for gs in cells:
        r, acc = [0.0] * (len(gs) + 1), 0.0
        for i in range(len(gs) - 1, -1, -1):
            acc += lat * sum(1 for k in ("target", "optimizer") if gs[i].get(k))
            r[i] = acc
        remaining.append(r)
    pos = [0] * len(cells)  # current group per cell
    ready = [0.0] * len(cells)  # when the current group became ready
    left = [dict(gs[0]) if gs else {} for gs in cells]  # tasks not yet started
    running = [0] * len(cells)  # tasks of the current group in flight
    free = dict(slots)
    events = []  # (finish time, cell, class)
    now = 0.0
    done = 0

    def start_tasks():
        for cls in ("target", "optimizer"):
            while free[cls] > 0:
                best = None
                for c in range(len(cells)):
                    if pos[c] >= len(cells[c]) or left[c].get(cls, 0) == 0:
                        continue
                    order = ready[c] if policy == "fifo" else -remaining[c][pos[c]]
                    key = (0 if not cells[c][pos[c]]["bulk"] else 1, order, c)
                    if best is None or key < best[0]:
                        best = (key, c)
                if best is None:
                    break
                c = best[1]
                n = min(free[cls], left[c][cls])
                left[c][cls] -= n
                running[c] += n
                free[cls] -= n
                for _ in range(n):
                    heapq.heappush(events, (now + lat, c, cls))

    for c in range(len(cells)):
        if not cells[c]:
            done += 1
    start_tasks()
    while events:
        now, c, cls = heapq.heappop(events)
        free[cls] += 1
        running[c] -= 1
        g = left[c]
        if running[c] == 0 and g.get("target", 0) == 0 and g.get("optimizer", 0) == 0:
            pos[c] += 1
            ready[c] = now
            if pos[c] < len(cells[c]):
                left[c] = dict(cells[c][pos[c]])
            else:
                done += 1
        # Start whatever became possible at this instant once every
        # completion at this time is in.
        if not events or events[0][0] > now:
            start_tasks()
    return now


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("campaign")
    ap.add_argument("--latency", type=float, required=True)
    ap.add_argument("--target-slots", type=int, required=True)
    ap.add_argument("--optimizer-slots", type=int, required=True)
    ap.add_argument("--wall", type=float)
    a = ap.parse_args()
    f = json.load(open(os.path.join(a.campaign, "campaign.json")))
    cells, tt, ot = [], 0, 0
    for c in f["cells"]:
        gs = cell_groups(os.path.join(a.campaign, c["dir"], "waves.jsonl"), a.latency)
        cells.append(gs)
        tt += sum(g.get("target", 0) for g in gs)
        ot += sum(g.get("optimizer", 0) for g in gs)
    lat = a.latency
    chain = max((sum(lat * sum(1 for k in ("target", "optimizer") if g.get(k)) for g in gs) for gs in cells), default=0)
    capacity = max(tt * lat / a.target_slots, ot * lat / max(a.optimizer_slots, 1))
    slots = {"target": a.target_slots, "optimizer": a.optimizer_slots}
    sched = min(replay(cells, lat, slots, p) for p in ("fifo", "chain"))
    line = "ideal %.1fs (zero-overhead schedule of the campaign's call graph, %d dependency groups, on these slots; lower bounds: longest cell chain %.1fs, fleet capacity %.1fs)" % (
        sched, sum(len(gs) for gs in cells), chain, capacity)
    if a.wall:
        line += "; wall/ideal %.2f" % (a.wall / sched)
    print(line)


if __name__ == "__main__":
    main()
