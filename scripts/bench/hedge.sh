#!/usr/bin/env bash
# Hedging against a heavy-tailed model (see docs/performance.md, "Hedging
# stragglers"): the demo, all-in-one, against one `skillfleet sim-llm`
# whose latencies are log-normal (median 300 ms, p99 3 s by default), run
# with hedging off and on in turn, ROUNDS pairs. Prints each run's wall
# time, calls and billed tokens (tokens.json), each pair's on/off ratio
# and the medians.
#
#   scripts/bench/hedge.sh [--rounds 5] [--median 300ms] [--p99 3s] [--fixed 300ms]
#
# --fixed gives every call the same latency instead (no tail): what
# hedging costs a workload it cannot help.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5 median=300ms p99=3s fixed=""
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --median) median=$2; shift 2 ;;
    --p99) p99=$2; shift 2 ;;
    --fixed) fixed=$2; shift 2 ;;
    *) echo "hedge.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
simpid=""
cleanup() { [[ -n "$simpid" ]] && kill -KILL "$simpid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
bin=$tmp/skillfleet
go build -o "$bin" ./cmd/skillfleet
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
latency=(--latency-median "$median" --latency-p99 "$p99")
[[ -n "$fixed" ]] && latency=(--latency "$fixed")
"$bin" sim-llm --addr "127.0.0.1:$port" "${latency[@]}" >"$tmp/sim.log" 2>&1 &
simpid=$!
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/v1"
run() { # run NAME HEDGE: one demo run; prints "wall calls tokens"
  local out=$tmp/$1 t0 t1
  t0=$(date +%s.%N)
  "$bin" train --config configs/demo.yaml --out "$out" --set runtime.sim_llm=false \
    --set model.target_base_url="$url" --set model.optimizer_base_url="$url" \
    --set model.target_options.hedge="$2" --set model.optimizer_options.hedge="$2" >"$out.log" 2>&1 ||
    { echo "hedge.sh: run $1 failed" >&2; tail -20 "$out.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 - "$out" "$t0" "$t1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1] + "/tokens.json"))["total"]
print("%.1f %d %d" % (float(sys.argv[3]) - float(sys.argv[2]), t["calls"], t["input_tokens"] + t["output_tokens"]))
PY
}
echo "demo vs sim-llm ${latency[*]}; $rounds pairs, hedging off then on"
printf '%-6s %-22s %-22s %s\n' pair "off: wall calls tokens" "on: wall calls tokens" "on/off wall"
: >"$tmp/pairs"
for i in $(seq "$rounds"); do
  off=$(run "off$i" off) on=$(run "on$i" on)
  ratio=$(python3 -c "print('%.3f' % (${on%% *} / ${off%% *}))")
  printf '%-6s %-22s %-22s %s\n' "$i" "$off" "$on" "$ratio"
  echo "$off $on $ratio" >>"$tmp/pairs"
done
python3 - "$tmp/pairs" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = lambda i: statistics.median(r[i] for r in rows)
print("median: off %.1f s, %d calls, %d tokens; on %.1f s, %d calls (%+.1f%%), %d tokens (%+.1f%%); on/off wall %.3f (pairs %s)" % (
    med(0), med(1), med(2), med(3), med(4), 100 * (med(4) / med(1) - 1), med(5), 100 * (med(5) / med(2) - 1), med(6),
    ", ".join("%.3f" % r[6] for r in rows)))
PY
