#!/usr/bin/env bash
# Paired bench runs under a heavy latency tail (see docs/performance.md,
# "Heavy-tailed latency"): scripts/bench/bench.sh with the flags of A
# (by default a log-normal latency: median 303 ms, p99 3.1 s, mean 0.5 s)
# and of B (by default a fixed 500 ms) in turn, ROUNDS pairs, the order
# swapped every other pair so that a machine whose speed drifts weighs on
# both alike. Every run must pass bench.sh's bill check (tokens.json equal
# to sim-llm's bill, every cut-short attempt with its cause) and make the
# decisions of the first run (the same events.jsonl); then it prints each
# pair's walls (the coordinator process's, and the run's own from
# summary.json: the process also waits for withdrawn attempts and shuts
# down), calls and A/B ratios, the min, median and max of each, and the
# load average when each run started.
#
#   scripts/bench/tail.sh [--rounds 3] [--a 'BENCH FLAGS'] [--b 'BENCH FLAGS'] [BENCH FLAGS...]
#
# The flags after the options go to both arms, e.g. --workers 4
# --concurrency 96 --optimizer-concurrency 64; --a and --b are split on
# spaces. Against an older build: --a '--latency 500ms' --b '--latency
# 500ms --bin /tmp/skillfleet-before'.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=3 a="--latency-median 303ms --latency-p99 3.1s" b="--latency 500ms"
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    *) break ;;
  esac
done
common=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # run ARM ROUND: one bench run; appends "arm round wall calls sha run_wall load" to $out/rows
  local flags load
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r -a flags <<<"$([[ $1 == A ]] && echo "$a" || echo "$b")"
  if ! scripts/bench/bench.sh "${common[@]}" "${flags[@]}" >"$out/$1$2.log" 2>&1; then
    echo "tail.sh: run $1$2 failed (bench or bill check):" >&2
    tail -5 "$out/$1$2.log" >&2
    exit 1
  fi
  python3 - "$1" "$2" "$out/$1$2.log" "$load" >>"$out/rows" <<'PY'
import re, sys
text = open(sys.argv[3]).read()
wall = re.search(r"^coordinator: wall ([0-9.]+)s", text, re.M).group(1)
calls = re.search(r"^bill: tokens.json (\d+) calls", text, re.M).group(1)
sha = re.search(r"^events.jsonl sha256 (\w+)", text, re.M).group(1)
run_wall = re.search(r"^wall ([0-9.]+)s  ideal", text, re.M).group(1)
print(sys.argv[1], sys.argv[2], wall, calls, sha, run_wall, sys.argv[4])
PY
  tail -1 "$out/rows"
}
echo "A: $a; B: $b; both: ${common[*]:-(bench defaults)}; $rounds pairs"
echo "arm round wall_s calls events_sha256 run_wall_s load_avg"
for i in $(seq "$rounds"); do
  if ((i % 2)); then run A "$i"; run B "$i"; else run B "$i"; run A "$i"; fi
done
python3 - "$out/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
shas = {r[4] for r in rows}
by = {(r[0], r[1]): (float(r[2]), int(r[3]), float(r[5])) for r in rows}
pairs = sorted({r[1] for r in rows}, key=int)
def mmm(xs, f="%.1f"):
    return (f + " (" + f + "-" + f + ")") % (statistics.median(xs), min(xs), max(xs))
for arm in "AB":
    print("%s: wall median %s s, run's wall %s s, calls %s" % (arm, mmm([by[arm, p][0] for p in pairs]), mmm([by[arm, p][2] for p in pairs]),
          mmm([by[arm, p][1] for p in pairs], "%d")))
wr = [by["A", p][0] / by["B", p][0] for p in pairs]
rr = [by["A", p][2] / by["B", p][2] for p in pairs]
cr = [by["A", p][1] / by["B", p][1] for p in pairs]
print("A/B per pair: wall %s; calls %s" % (", ".join("%.3f" % x for x in wr), ", ".join("%.3f" % x for x in cr)))
print("A/B median (min-max): wall %s, run's wall %s, calls %s" % (mmm(wr, "%.3f"), mmm(rr, "%.3f"), mmm(cr, "%.3f")))
print("events.jsonl: " + ("the same in every run" if len(shas) == 1 else "DIFFERENT: " + ", ".join(sorted(shas))))
sys.exit(0 if len(shas) == 1 else 1)
PY
