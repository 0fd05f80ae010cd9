#!/usr/bin/env python3
"""What hedging can do for a run's call graph under a log-normal latency tail.

  scripts/bench/tail_bound.py RUN_DIR TARGET_SLOTS OPTIMIZER_SLOTS [POLICY,...]

Reads RUN_DIR/waves.jsonl (a fixed-latency run's call graph: each wave's
calls, class and time span), groups the waves that overlapped in time
(they ran side by side; a group takes its slowest wave), chains the groups,
and for each policy gives the chain's time and copies. Each wave is its
calls on its class's slots, in order; a call takes a log-normal draw of
median 0.303 s and sigma 1 (mean 0.5 s, p99 3.1 s), except under "fixed"
(0.5 s each). A copy starts at once on a free slot and takes its own draw;
the first answer ends the call. Policies:

  fixed    every call 0.5 s
  none     the tail, no copies
  default  copies of calls out 4 medians, in a wave's last round only,
           at most 15% of the wave (at least 2): runtime.hedge's defaults
  free     copies of calls out 3 medians, last round, no cap
  free2    copies of calls out 2 medians, in any round, no cap

Waves of more than 200 calls are modelled as 200 plus whole fixed rounds.
"""
import functools, json, math, random, statistics, sys, heapq

MED, SIG, TRIALS = 0.303, 1.0, 60


def draw():
    return MED * math.exp(SIG * random.gauss(0, 1))


def wave(n, slots, delay, budget, last_round):
    """One wave's time and copies: n calls on slots, copies after delay."""
    queue = list(range(n))
    running, start, done, hedged = [], {}, [False] * n, set()
    out, copies, finished, now = set(), 0, 0, 0.0

    def fill(t):
        while len(running) < slots and queue:
            i = queue.pop(0)
            start[i] = t
            out.add(i)
            heapq.heappush(running, (t + draw(), i))

    fill(0.0)
    while finished < n:
        nxt = running[0][0]
        due = None
        if delay is not None and copies < budget and (not last_round or len(out) + len(queue) <= slots):
            c = [(start[i] + delay, i) for i in out if i not in hedged]
            if c:
                t, i = min(c)
                if t < nxt:
                    due = (max(t, now), i)
        if due:
            now, i = due
            hedged.add(i)
            copies += 1
            heapq.heappush(running, (now + draw(), i))
            continue
        now, i = heapq.heappop(running)
        if not done[i]:
            done[i] = True
            finished += 1
            out.discard(i)
        running = [r for r in running if not done[r[1]]]
        heapq.heapify(running)
        fill(now)
    return now, copies


@functools.lru_cache(None)
def expected(n, slots, policy):
    if n == 0:
        return 0.0, 0.0
    m = min(n, 200)
    extra = (math.ceil(n / slots) - math.ceil(m / slots)) * 0.5
    delay, budget, last = {
        "none": (None, 0, True),
        "default": (4 * MED, max(min(m, 2), math.ceil(0.15 * m)), True),
        "free": (3 * MED, 10**9, True),
        "free2": (2 * MED, 10**9, False),
    }[policy]
    runs = [wave(m, slots, delay, budget, last) for _ in range(TRIALS)]
    return statistics.mean(r[0] for r in runs) + extra, statistics.mean(r[1] for r in runs)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    run, tslots, oslots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    policies = (sys.argv[4] if len(sys.argv) > 4 else "fixed,none,default,free,free2").split(",")
    waves = sorted((json.loads(l) for l in open(run + "/waves.jsonl")), key=lambda w: w["start_ms"])
    groups, end = [], -1
    for w in waves:
        if groups and w["start_ms"] < end:
            groups[-1].append(w)
            end = max(end, w["end_ms"])
        else:
            groups.append([w])
            end = w["end_ms"]
    base = None
    for policy in policies:
        total = copies = calls = 0
        for g in groups:
            slowest = 0.0
            for w in g:
                n, slots = w["ran"], tslots if w["class"] == "target" else oslots
                calls += n
                if policy == "fixed":
                    t = math.ceil(n / slots) * 0.5
                else:
                    t, c = expected(n, slots, policy)
                    copies += c
                slowest = max(slowest, t)
            total += slowest
        base = base or total
        print("%-8s chain %7.1f s  %.2fx the first policy's  copies %5.0f (%.1f%% of %d calls)"
              % (policy, total, total / base, copies, 100 * copies / max(calls, 1), calls), flush=True)


if __name__ == "__main__":
    main()
