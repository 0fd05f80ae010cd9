#!/usr/bin/env python3
"""What hedging can do for a run's call graph under a log-normal latency tail.

  scripts/bench/tail_bound.py RUN_DIR TARGET_SLOTS OPTIMIZER_SLOTS [POLICY,...] [--wall SECONDS]

Reads RUN_DIR/waves.jsonl (a fixed-latency run's call graph: each wave's
calls, class and time span), groups the waves that overlapped in time
(they ran side by side; a group takes its slowest wave), chains the groups,
and for each policy gives the chain's time and copies. Each wave is its
calls on its class's slots, in order; a call takes a log-normal draw of
median 0.303 s and sigma 1 (mean 0.5 s, p99 3.1 s), except under "fixed"
(0.5 s each). A copy takes its own draw; the first answer ends the call.
Policies:

  fixed        every call 0.5 s
  none         the tail, no copies
  default      copies of calls out 4 medians, in a wave's last round only,
               at most 15% of the wave (at least 2): runtime.hedge's defaults
  free         copies of calls out 3 medians, last round, no cap
  free2        copies of calls out 2 medians, in any round, no cap
  h:D:CAP:R    copies of calls out D medians, at most CAP of each wave's
               calls (rounded up; 0 for no cap), R "last" (a wave's last
               round only) or "any"
  oracle:F     a clairvoyant scheduler with copies worth F of the run's
               calls: it knows every draw, gives a copy to the call that
               ends its wave last, at that call's own start and on a slot
               of its own, and hands its copies to the waves where they
               shorten the chain most. No policy that copies calls (and
               leaves the call graph as it is) does better with F copies.
  best:F       the h:D:CAP:R policy of a grid with the shortest chain
               among those with at most F copies

--wall SECONDS, a measured fixed-latency run's wall, adds a column: that
wall plus each policy's chain minus the fixed chain (the run's own work
beside the calls does not change with the latency), over that wall.

Waves of more than 200 calls are modelled as 200 plus whole fixed rounds.
"""
import functools, heapq, json, math, random, statistics, sys

MED, SIG, TRIALS, ORACLE_TRIALS, CAP = 0.303, 1.0, 120, 150, 200
GRID = [(d, cap, r) for d in (1.5, 2, 3, 4) for cap in (0.1, 0.15, 0.25, 0) for r in ("last", "any")]


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


def parse(policy):
    """(delay in seconds or None, cap fraction or None, last round only) of a named or h:D:CAP:R policy."""
    named = {"none": "h:none:0:last", "default": "h:4:0.15:last", "free": "h:3:0:last", "free2": "h:2:0:any"}
    _, d, cap, r = named.get(policy, policy).split(":")
    if r not in ("last", "any"):
        raise ValueError("policy %s: round must be last or any" % policy)
    return (None if d == "none" else float(d) * MED), float(cap) or None, r == "last", policy == "default"


def extra_rounds(n, slots):
    m = min(n, CAP)
    return m, (math.ceil(n / slots) - math.ceil(m / slots)) * 0.5


@functools.lru_cache(None)
def expected(n, slots, policy):
    """A wave's mean time and copies under an online policy."""
    if n == 0:
        return 0.0, 0.0
    m, extra = extra_rounds(n, slots)
    delay, cap, last, at_least_two = parse(policy)
    budget = 10**9 if cap is None else math.ceil(cap * m)
    if at_least_two:
        budget = max(min(m, 2), budget)
    runs = [wave(m, slots, delay, budget, last) for _ in range(TRIALS)]
    return statistics.mean(r[0] for r in runs) + extra, statistics.mean(r[1] for r in runs)


def makespan(d, slots):
    """The time of calls of durations d started in order on slots, and the index of the one ending last."""
    free = [0.0] * min(slots, len(d))
    end, last = 0.0, -1
    for i, x in enumerate(d):
        t = heapq.heappop(free) + x
        heapq.heappush(free, t)
        if t > end:
            end, last = t, i
    return end, last


@functools.lru_cache(None)
def oracle_curve(n, slots):
    """A wave's mean time with k clairvoyant copies, k = 0, 1, ...: each copy
    goes to the call that ends the wave last, while that helps."""
    m, extra = extra_rounds(n, slots)
    kmax = min(m, 60)
    sums = [0.0] * (kmax + 1)
    for _ in range(ORACLE_TRIALS):
        x = [draw() for _ in range(m)]
        y = [draw() for _ in range(m)]
        d, copied = x[:], set()
        t, last = makespan(d, slots)
        for k in range(kmax + 1):
            sums[k] += t
            if k < kmax and last not in copied and y[last] < x[last]:
                copied.add(last)
                d[last] = y[last]
                t, last = makespan(d, slots)
    return [s / ORACLE_TRIALS + extra for s in sums]


def chain(groups, tslots, oslots, policy):
    """The chain's time, copies and calls under one policy."""
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
    return total, copies, calls


def oracle(groups, tslots, oslots, frac):
    """The chain's time when the clairvoyant copies, frac of the calls, go
    one at a time to the group whose time they shorten most."""
    calls = sum(w["ran"] for g in groups for w in g)
    budget = int(frac * calls)
    curves = [[oracle_curve(w["ran"], tslots if w["class"] == "target" else oslots) for w in g] for g in groups]
    ks = [[0] * len(g) for g in groups]

    def best_step(gi):
        """The gain of one more copy in group gi (to its slowest wave) and that wave."""
        cur = [c[k] for c, k in zip(curves[gi], ks[gi])]
        now = max(cur)
        wi = cur.index(now)
        c, k = curves[gi][wi], ks[gi][wi]
        if k + 1 >= len(c):
            return 0.0, wi
        cur[wi] = c[k + 1]
        return now - max(cur), wi

    heap = []
    for gi in range(len(groups)):
        gain, wi = best_step(gi)
        heapq.heappush(heap, (-gain, gi, wi))
    used = 0
    while used < budget and heap:
        gain, gi, wi = heapq.heappop(heap)
        if -gain <= 0:
            break
        ks[gi][wi] += 1
        used += 1
        gain, wi = best_step(gi)
        heapq.heappush(heap, (-gain, gi, wi))
    total = sum(max(c[k] for c, k in zip(cs, kk)) for cs, kk in zip(curves, ks))
    return total, used, calls


def main():
    args = sys.argv[1:]
    wall = None
    if "--wall" in args:
        i = args.index("--wall")
        wall = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    run, tslots, oslots = args[0], int(args[1]), int(args[2])
    policies = (args[3] if len(args) > 3 else "fixed,none,default,free,free2").split(",")
    waves = sorted((json.loads(l) for l in open(run + "/waves.jsonl")), key=lambda w: w["start_ms"])
    groups, end = [], -1
    for w in waves:
        if groups and w["start_ms"] < end:
            groups[-1].append(w)
            end = max(end, w["end_ms"])
        else:
            groups.append([w])
            end = w["end_ms"]
    fixed, _, _ = chain(groups, tslots, oslots, "fixed")
    for policy in policies:
        name = policy
        if policy.startswith("oracle:"):
            total, copies, calls = oracle(groups, tslots, oslots, float(policy.split(":")[1]))
        elif policy.startswith("best:"):
            limit = float(policy.split(":")[1])
            found = None
            for d, cap, r in GRID:
                p = "h:%g:%g:%s" % (d, cap, r)
                total, copies, calls = chain(groups, tslots, oslots, p)
                if copies <= limit * calls and (found is None or total < found[1]):
                    found = (p, total, copies, calls)
            if found is None:
                print("%-14s no policy of the grid stays within %.1f%% copies" % (policy, 100 * limit))
                continue
            name = "%s=%s" % (policy, found[0])
            _, total, copies, calls = found
        else:
            total, copies, calls = chain(groups, tslots, oslots, policy)
        line = "%-14s chain %7.1f s  %.2fx fixed  copies %5.0f (%.1f%% of %d calls)" % (
            name, total, total / fixed, copies, 100 * copies / max(calls, 1), calls)
        if wall is not None:
            line += "  wall %.1f s, %.2fx the fixed wall" % (wall - fixed + total, (wall - fixed + total) / wall)
        print(line, flush=True)


if __name__ == "__main__":
    main()
