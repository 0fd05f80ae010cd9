#!/usr/bin/env bash
# Measure a campaign's control plane at N active cells (see
# docs/performance.md, "Control plane at N runs").
#
#   scripts/bench/controlplane.sh [--cells 192] [--workers 2] [--config configs/demo.yaml] \
#       [--latency 300ms] [--concurrency 24] [--settle 20]
#
# Starts `skillfleet sim-llm` with the latency, a NATS server, the worker
# processes and a campaign of CELLS cells (the config at seeds 1..CELLS,
# all active at once). Once every cell has started and SETTLE more seconds
# have passed it prints: the campaign process's open file descriptors
# (/proc/PID/fd) and TCP connections, each worker's gRPC connections (its
# established TCP connections to anything but NATS and the sim-llm) and
# the messages a watcher of the run directory receives a second
# (scripts/bench/kvcount). Then it stops everything: the cells do not
# finish.
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=2 cells=192 config=configs/demo.yaml latency=300ms conc=24 oconc=16 settle=20
while (($#)); do
  case "$1" in
    --workers) workers=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --optimizer-concurrency) oconc=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    *) echo "controlplane.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
source scripts/lib/fleet.sh
fleet_scratch
fleet_build
bin=$tmp/skillfleet
go build -o "$tmp/kvcount" ./scripts/bench/kvcount
fleet_servers "$tmp" --latency "$latency"
fleet_campaign_yaml "$tmp/campaign.yaml" controlplane "$cells" "$config"
fleet_workers "$bin" "$workers" "$conc" "$oconc" "$tmp"
"$bin" campaign --config "$tmp/campaign.yaml" --out "$tmp/camp" --nats "$nats" --workers 0 \
  --set model.backend=openai_compatible --set model.optimizer_base_url="$url" --set model.target_base_url="$url" \
  --set runtime.sim_llm=false >"$tmp/camp.out" 2>&1 &
pids+=($!) cpid=$!
for _ in $(seq 600); do
  started=$(grep -c ': started$' "$tmp/camp.out" || true)
  ((started >= cells)) && break
  kill -0 "$cpid" 2>/dev/null || { echo "controlplane: campaign exited" >&2; tail -20 "$tmp/camp.out" >&2; exit 1; }
  sleep 1
done
echo "controlplane: $started of $cells cells started; settling ${settle}s"
sleep "$settle"
echo "campaign: $cells cells of $config, $workers worker process(es) x $conc + $oconc slots, latency $latency"
echo "campaign process: $(ls /proc/$cpid/fd | wc -l) open file descriptors"
ss -Htnp state established >"$tmp/ss.txt"
python3 - "$tmp/ss.txt" "$cpid" "$nats_port" "$sim_port" "${wpids[@]}" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
cpid, nats, sim, wpids = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def conns(pid):
    out = []
    for l in lines:
        if re.search(r"pid=%s," % pid, l):
            f = l.split()
            out.append((f[-3], f[-2]))  # local, peer
    return out
c = conns(cpid)
to_nats = sum(1 for _, p in c if p.endswith(":" + nats))
print("campaign process: %d TCP connections (%d to NATS, %d others: gRPC from workers, sim-llm)" % (len(c), to_nats, len(c) - to_nats))
for i, w in enumerate(wpids, 1):
    wc = conns(w)
    grpc = [p for _, p in wc if not p.endswith(":" + nats) and not p.endswith(":" + sim)]
    print("worker %d: %d gRPC connections to %d coordinator address(es)" % (i, len(grpc), len(set(grpc))))
PY
"$tmp/kvcount" --nats "$nats" --for 10s
