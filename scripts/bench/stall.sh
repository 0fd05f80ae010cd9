#!/usr/bin/env bash
# Stalled model calls on the distributed demo (see docs/performance.md,
# "Stalled calls"): a coordinator process and two worker processes of 12
# slots on a NATS server, the model a `skillfleet sim-llm` at --latency.
# Each round runs the undisturbed reference, then one run for each
# --rates value against a sim-llm that holds that fraction of its calls
# without answering (--fault-stall, drawn from the round's --fault-seed).
# The reference runs between the faulted ones, so that a loaded machine
# slows both alike. Every run must end with the first reference's
# decisions (events.jsonl and best_skill.md) in under --bound times its
# round's reference wall. Prints one line per run (with the hedged
# attempts tokens.json counts: at the reference's fixed latency a copy is
# one the hedger should not have made) and, per rate, the min/median/max
# wall and the worst ratio; exits 1 when a run misses.
#
#   scripts/bench/stall.sh [--runs 10] [--rates 0.005,0.02] [--latency 100ms] [--bound 2] [--keep DIR]
#
# --keep DIR keeps the logs and run dir of each run that misses.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=10 rates=0.005,0.02 latency=100ms bound=2 keep=
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --bound) bound=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stall.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a rate_list <<<"$rates"
source scripts/lib/fleet.sh
fleet_scratch
fleet_build
bin=$tmp/skillfleet

run() { # run NAME SEED [SIM_LLM_FLAG...]: one distributed demo run; prints "wall stalls billed hedged"
  local name=$1 seed=$2 dir=$tmp/$1 start end ws=() coord servers stats
  shift 2
  mkdir -p "$dir"
  fleet_servers "$dir" --latency "$latency" --fault-seed "$seed" "$@"
  servers=("${pids[@]: -2}")
  fleet_workers "$bin" 2 12 8 "$dir"
  ws=("${wpids[@]}")
  start=$(date +%s.%N)
  "$bin" coordinator --config configs/demo.yaml --nats "$nats" --out "$dir/run" --no-fsync \
    --set runtime.sim_llm=false --set model.backend=openai_compatible \
    --set model.optimizer_base_url="$url" --set model.target_base_url="$url" >"$dir/coordinator.log" 2>&1 &
  coord=$!
  local status=0
  wait "$coord" || status=$?
  end=$(date +%s.%N)
  stats=$(curl -fsS "$url/stats" || echo "{}")
  # This runs in a command substitution: its processes are ended here, not
  # by the caller's exit trap.
  for p in "${ws[@]}" "${servers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${ws[@]}" "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
  if ((status != 0)); then
    echo "stall.sh: run $name failed (exit $status):" >&2
    tail -n 20 "$dir/coordinator.log" >&2
    return 1
  fi
  python3 -c "
import json, sys
s = json.loads(sys.argv[3])
h = json.load(open(sys.argv[4]))['total'].get('failure_causes', {}).get('hedged', 0)
print('%.1f %d %d %d' % (float(sys.argv[2]) - float(sys.argv[1]), s.get('faults', {}).get('stall', 0), s.get('billed', 0), h))" "$start" "$end" "$stats" "$dir/run/tokens.json"
}

same() { # same DIR: whether run DIR made the first reference's decisions
  cmp -s "$tmp/ref1/run/events.jsonl" "$1/run/events.jsonl" && cmp -s "$tmp/ref1/run/best_skill.md" "$1/run/best_skill.md"
}

echo "distributed demo at $latency, 2 workers x 12; $runs rounds of: reference, then --fault-stall ${rate_list[*]}"
printf '%-6s %-8s %8s %8s %7s %7s %8s %7s %s\n' round run wall ref ratio stalls billed hedged decisions
: >"$tmp/results"
fail=0
for i in $(seq "$runs"); do
  out=$(run "ref$i" "$i") || exit 1
  read -r ref _ rbilled rhedged <<<"$out"
  ok=same
  same "$tmp/ref$i" || { ok=DIFFERENT; fail=1; }
  printf '%-6s %-8s %8s %8s %7s %7s %8s %7s %s\n' "$i" ref "$ref" "$ref" 1.00 0 "$rbilled" "$rhedged" "$ok"
  echo "ref $ref $ref 0 $rbilled $rhedged" >>"$tmp/results"
  for r in "${rate_list[@]}"; do
    out=$(run "s$r-$i" "$i" --fault-stall "$r") || exit 1
    read -r wall stalled billed hedged <<<"$out"
    ratio=$(python3 -c "print('%.2f' % ($wall / $ref))")
    ok=same
    same "$tmp/s$r-$i" || { ok=DIFFERENT; fail=1; }
    python3 -c "import sys; sys.exit(0 if $wall < $bound * $ref else 1)" || { ok="$ok, over ${bound}x"; fail=1; }
    printf '%-6s %-8s %8s %8s %7s %7s %8s %7s %s\n' "$i" "$r" "$wall" "$ref" "$ratio" "$stalled" "$billed" "$hedged" "$ok"
    if [[ -n "$keep" && "$ok" != same ]]; then
      mkdir -p "$keep" && cp -r "$tmp/s$r-$i" "$keep/" && echo "  kept in $keep/s$r-$i"
    fi
    echo "$r $wall $ref $stalled $billed $hedged" >>"$tmp/results"
  done
done
python3 - "$tmp/results" "$bound" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for name in dict.fromkeys(r[0] for r in rows):
    walls = [float(r[1]) for r in rows if r[0] == name]
    ratios = [float(r[1]) / float(r[2]) for r in rows if r[0] == name]
    label = "undisturbed" if name == "ref" else "--fault-stall " + name
    stalls = sum(int(r[3]) for r in rows if r[0] == name)
    billed = statistics.median(int(r[4]) for r in rows if r[0] == name)
    hedged = sum(int(r[5]) for r in rows if r[0] == name)
    print("%-22s %2d runs: wall min/median/max %.1f/%.1f/%.1f s; ratio to the round's reference median %.2f, max %.2f (bound %s); %d calls stalled; median %d calls billed; %d hedged attempts"
          % (label, len(walls), min(walls), statistics.median(walls), max(walls), statistics.median(ratios), max(ratios), sys.argv[2], stalls, billed, hedged))
PY
exit "$fail"
