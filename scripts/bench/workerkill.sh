#!/usr/bin/env bash
# Measures what dead workers cost (see docs/performance.md): the demo at
# 300 ms per call on a coordinator process and two worker processes of 12
# slots each, once undisturbed and once with a worker killed (SIGKILL, by
# its own pid) and replaced three times; prints both wall times, and checks
# the decisions are the same.
#
#   scripts/bench/workerkill.sh [--latency 300ms] [--kills 3] [--every 4]
set -euo pipefail
cd "$(dirname "$0")/../.."
latency=300ms kills=3 every=4 ackwait=1s
while (($#)); do
  case "$1" in
    --latency) latency=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --ack-wait) ackwait=$2; shift 2 ;;
    *) echo "workerkill.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
source scripts/lib/fleet.sh
fleet_scratch
fleet_build
bin=$tmp/skillfleet
sim_port=$(fleet_port)
"$bin" sim-llm --addr "127.0.0.1:$sim_port" --latency "$latency" >"$tmp/sim.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$sim_port/v1"

run() { # run NAME KILLS
  local name=$1 n=$2 nats_port
  nats_port=$(fleet_port)
  "$tmp/natsd" --addr "127.0.0.1:$nats_port" --store "$tmp/nats-$name" >"$tmp/nats-$name.log" 2>&1 &
  local natsd=$!
  pids+=($natsd)
  fleet_wait_port "$nats_port"
  local nats="nats://127.0.0.1:$nats_port" ws=()
  for i in 1 2; do
    "$bin" worker --nats "$nats" --concurrency 12 --optimizer-concurrency 8 --log-level error >"$tmp/w-$name-$i.log" 2>&1 &
    ws+=($!); pids+=($!)
  done
  local start end
  start=$(date +%s.%N)
  "$bin" coordinator --config configs/demo.yaml --nats "$nats" --out "$tmp/$name" --no-fsync --ack-wait "$ackwait" \
    --set runtime.sim_llm=false --set model.backend=openai_compatible \
    --set model.optimizer_base_url="$url" --set model.target_base_url="$url" >"$tmp/c-$name.log" 2>&1 &
  local coord=$!
  for k in $(seq "$n"); do
    sleep "$every"
    kill -0 "$coord" 2>/dev/null || break
    kill -KILL "${ws[0]}"; wait "${ws[0]}" 2>/dev/null || true
    "$bin" worker --nats "$nats" --concurrency 12 --optimizer-concurrency 8 --log-level error >"$tmp/w-$name-r$k.log" 2>&1 &
    ws[0]=$!; pids+=($!)
  done
  wait "$coord" || { echo "coordinator $name failed" >&2; tail "$tmp/c-$name.log" >&2; exit 1; }
  end=$(date +%s.%N)
  for w in "${ws[@]}"; do kill -TERM "$w" 2>/dev/null || true; done
  kill -TERM "$natsd" 2>/dev/null || true
  python3 -c "print('%.1f' % ($end - $start))"
}
ref=$(run ref 0)
hit=$(run kills "$kills")
same=no
cmp -s "$tmp/ref/events.jsonl" "$tmp/kills/events.jsonl" && cmp -s "$tmp/ref/best_skill.md" "$tmp/kills/best_skill.md" && same=yes
echo "demo at $latency, 2 workers x 12: undisturbed ${ref}s; $kills worker kills (every ${every}s, replaced) ${hit}s; cost $(python3 -c "print('%.1f' % ($hit - $ref))")s; same decisions: $same"
