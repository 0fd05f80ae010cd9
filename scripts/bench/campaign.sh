#!/usr/bin/env bash
# Benchmark a campaign on one fleet (see docs/performance.md).
#
#   scripts/bench/campaign.sh [--workers 4] [--cells 12] [--config configs/demo.yaml] \
#       [--latency 500ms] [--concurrency 24] [--optimizer-concurrency 16] [--keep DIR] \
#       [--profile DIR]
#
# --profile writes CPU profiles of the campaign process (DIR/campaign.pprof),
# each worker (DIR/workerN.pprof) and the NATS server (DIR/nats.pprof), and
# prints the server's message counts; read them with go tool pprof.
#
# Starts `skillfleet sim-llm` with the latency, a NATS server (the pinned
# nats-server module), N worker processes of the given concurrency each,
# and a campaign of CELLS cells (the config at seeds 1..CELLS, all active
# at once) on that fleet. Prints the campaign's wall time, calls, each
# cell's wall against the mean, two lower bounds (the longest cell's own
# chain of waves at unlimited concurrency; the fleet's capacity: all tasks
# packed into the slots at the latency) and the ideal: the campaign's call
# graph replayed on the same slots with zero overhead
# (scripts/bench/campaign_ideal.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=1 cells=12 config=configs/demo.yaml latency=500ms conc=24 oconc=16 keep="" profile=""
while (($#)); do
  case "$1" in
    --workers) workers=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --optimizer-concurrency) oconc=$2; shift 2 ;;
    --keep) keep=$(realpath -m "$2"); shift 2 ;;
    --profile) profile=$(realpath -m "$2"); mkdir -p "$profile"; shift 2 ;;
    *) echo "campaign.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
source scripts/lib/fleet.sh
fleet_scratch
fleet_build
bin=$tmp/skillfleet
prof() { [[ -n "$profile" ]] && echo "$profile/$1.pprof" || true; }
fleet_servers "$tmp" --latency "$latency" -- --cpuprofile "$(prof nats)"
fleet_campaign_yaml "$tmp/campaign.yaml" bench "$cells" "$config"
fleet_workers "$bin" "$workers" "$conc" "$oconc" "$tmp" "$profile"
start=$(date +%s.%N)
if ! SKILLFLEET_CPUPROFILE=$(prof campaign) "$bin" campaign --config "$tmp/campaign.yaml" --out "$tmp/camp" --nats "$nats" --workers 0 \
  --set runtime.sim_llm=false --set model.backend=openai_compatible \
  --set model.optimizer_base_url="$url" --set model.target_base_url="$url" --set runtime.sim_llm=false >"$tmp/camp.out" 2>&1; then
  echo "bench: campaign failed" >&2; tail -30 "$tmp/camp.out" >&2; exit 1
fi
end=$(date +%s.%N)
if [[ -n "$profile" ]]; then
  # A worker writes its profile when it stops.
  for p in "${wpids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${wpids[@]}"; do wait "$p" 2>/dev/null || true; done
  kill -TERM "$natspid" 2>/dev/null || true
  wait "$natspid" 2>/dev/null || true
  grep '^nats traffic' "$tmp/nats.log" || true
fi
[[ -n "$keep" ]] && rm -rf "$keep" && cp -r "$tmp/camp" "$keep"
lat=$(python3 -c "s='$latency'; print(float(s[:-2])/1000 if s.endswith('ms') else float(s[:-1]))")
echo "campaign: $cells cells of $config, $workers worker process(es) x $conc target + $oconc optimizer slots, latency $latency"
python3 - "$tmp/camp" "$start" "$end" "$lat" "$((workers * conc))" "$((workers * oconc))" <<'PY'
import json, os, sys
camp, start, end, lat, tslots, oslots = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
wall = end - start
f = json.load(open(os.path.join(camp, "campaign.json")))
walls, calls = [], 0
ttasks = otasks = 0
chain_max = 0.0
for c in f["cells"]:
    walls.append(c["wall_s"]); calls += c["calls"]
    d = os.path.join(camp, c["dir"])
    waves = [json.loads(l) for l in open(os.path.join(d, "waves.jsonl")) if l.strip()]
    # A cell's chain: waves whose intervals overlapped form one group; at
    # unlimited concurrency a group costs one latency per class that ran.
    waves.sort(key=lambda w: w["start_ms"])
    chain, end_ms, classes = 0.0, None, set()
    for w in waves:
        if w.get("ran", w["tasks"]) == 0:
            continue
        if w["class"] == "target": ttasks += w.get("ran", w["tasks"])
        else: otasks += w.get("ran", w["tasks"])
        if end_ms is None or w["start_ms"] >= end_ms:
            chain += lat if classes else 0
            classes, end_ms = set(), w["end_ms"]
        classes.add(w["class"]); end_ms = max(end_ms, w["end_ms"])
    chain += lat if classes else 0
    chain_max = max(chain_max, chain)
capacity = max(ttasks * lat / tslots, otasks * lat / max(oslots, 1))
ideal = max(chain_max, capacity)
mean = sum(walls) / len(walls)
print("wall %.1fs; %d calls; lower bound %.1fs (longest cell chain %.1fs, fleet capacity %.1fs); wall/bound %.2f" % (wall, calls, ideal, chain_max, capacity, wall / ideal))
print("cell walls: mean %.1fs, max %.1fs (max/mean %.2f), min %.1fs" % (mean, max(walls), max(walls) / mean, min(walls)))
print("states: %s" % ", ".join("%s=%d" % (k, sum(1 for c in f["cells"] if c["state"] == k)) for k in sorted({c["state"] for c in f["cells"]})))
PY
python3 scripts/bench/campaign_ideal.py "$tmp/camp" --latency "$lat" --target-slots "$((workers * conc))" \
  --optimizer-slots "$((workers * oconc))" --wall "$(python3 -c "print($end - $start)")"
