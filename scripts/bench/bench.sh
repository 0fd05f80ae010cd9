#!/usr/bin/env bash
# Benchmark a training run on the simulated model (see docs/performance.md).
#
#   scripts/bench/bench.sh [--config configs/sim_paper.yaml] [--workers 1] \
#       [--concurrency 24] [--optimizer-concurrency 16] [--latency 500ms] \
#       [--latency-median 303ms --latency-p99 3.1s] [--rpm 0] [--tpm 0] \
#       [--set section.key=value ...] [--profile FILE] [--keep DIR] [--redis] [--bin FILE] \
#       [--pad SIZE] [--ack-wait DURATION]
#
# --pad pads every target reply, and so every rollout trajectory, to SIZE
# (sim-llm --trajectory-pad, e.g. 50KB: agent-sized trajectories; the
# decisions do not change), to measure the coordinator's memory with
# trajectories of a real agent's size.
# --ack-wait sets the task consumers' AckWait (the coordinator's
# --ack-wait): how long a task whose worker stopped heart-beating waits
# before JetStream delivers it again. On a machine so loaded that a
# worker's heartbeats come late, a shorter one has tasks run twice.
# --latency-median and --latency-p99 give every call a log-normal latency
# instead of the fixed one (median 303ms and p99 3.1s: mean 0.5s, sigma 1,
# the same mean as the fixed 500ms); the ideal time is then taken at the
# mean. --bin runs an already built skillfleet (to compare two builds on
# the same bench) instead of building this tree's.
#
# --profile writes the coordinator's CPU profile (go tool pprof FILE);
# --keep copies the run directory to DIR; --redis starts a redis-server
# and has the workers share their rate limits through it (set the client
# limits with --set model.target_options.tpm=N and optimizer_options).
#
# Starts `skillfleet sim-llm` with the latency model and limits, NATS (an
# embedded server inside a helper process), a coordinator process and N
# worker processes, then prints the bench table: calls and tokens per
# stage, wall vs ideal time, coordinator CPU and peak RSS, worker peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
config=configs/sim_paper.yaml workers=1 conc=24 oconc=16 latency=500ms rpm=0 tpm=0
median="" p99="" prebuilt=""
sets=() profile="" keep="" redis="" pad="" coord_extra=()
while (($#)); do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --optimizer-concurrency) oconc=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --latency-median) median=$2; shift 2 ;;
    --latency-p99) p99=$2; shift 2 ;;
    --bin) prebuilt=$(realpath "$2"); shift 2 ;;
    --rpm) rpm=$2; shift 2 ;;
    --tpm) tpm=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    --profile) profile=$(realpath -m "$2"); shift 2 ;;
    --keep) keep=$(realpath -m "$2"); shift 2 ;;
    --redis) redis=1; shift ;;
    --pad) pad=$2; shift 2 ;;
    --ack-wait) coord_extra+=(--ack-wait "$2"); shift 2 ;;
    *) echo "bench.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
if [[ -n "$median" && -z "$p99" || -z "$median" && -n "$p99" ]]; then
  echo "bench.sh: give --latency-median and --latency-p99 together" >&2; exit 2
fi
source scripts/lib/fleet.sh
fleet_scratch
if [[ -n "$prebuilt" ]]; then
  cp "$prebuilt" "$tmp/skillfleet"
  go build -o "$tmp/natsd" ./scripts/bench/natsd
else
  fleet_build
fi
bin=$tmp/skillfleet
# seconds DURATION: a Go duration of ms or s in seconds.
seconds() { python3 -c "import sys; s=sys.argv[1]; print(float(s[:-2])/1000 if s.endswith('ms') else float(s[:-1]))" "$1"; }
sim_latency=(--latency "$latency") mean=$(seconds "$latency")
if [[ -n "$median" ]]; then
  sim_latency=(--latency-median "$median" --latency-p99 "$p99")
  # The log-normal's mean: median * exp(sigma^2 / 2), sigma = ln(p99 / median) / z(0.99).
  mean=$(python3 -c "import math,sys; m,p=float(sys.argv[1]),float(sys.argv[2]); s=math.log(p/m)/2.3263478740408408; print(round(m*math.exp(s*s/2),4))" "$(seconds "$median")" "$(seconds "$p99")")
  latency="log-normal median $median p99 $p99 (mean ${mean}s)"
fi
# /usr/bin/time does not pass signals on: stop its child too.
stop() { pkill -"$1" -P "$2" 2>/dev/null || true; kill -"$1" "$2" 2>/dev/null || true; }
pad_flags=()
[[ -n "$pad" ]] && pad_flags=(--trajectory-pad "$pad")
fleet_servers "$tmp" "${sim_latency[@]}" --rpm "$rpm" --tpm "$tpm" "${pad_flags[@]}"
worker_extra=()
if [[ -n "$redis" ]]; then
  redis_port=$(fleet_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
  pids+=($!)
  worker_extra=(--redis "redis://127.0.0.1:$redis_port/0")
fi
grpc_port=$(fleet_port)
health_port=$(fleet_port)
SKILLFLEET_CPUPROFILE="$profile" /usr/bin/time -f "%e %U %S %M" -o "$tmp/coord.time" "$bin" coordinator --config "$config" --out "$tmp/run" \
  --nats "nats://127.0.0.1:$nats_port" --grpc-addr "127.0.0.1:$grpc_port" --health-addr "127.0.0.1:$health_port" --no-fsync --log-format json "${coord_extra[@]}" \
  --set runtime.sim_llm=false --set model.backend=openai_compatible \
  --set model.optimizer_base_url="$url" --set model.target_base_url="$url" "${sets[@]}" >"$tmp/coord.out" 2>"$tmp/coord.err" &
coord=$!
if [[ "$tpm" != 0 ]]; then
  # Once a second: the model server's token counts and the coordinator's
  # outstanding tasks, to measure the limit's use while work is queued.
  (while kill -0 "$coord" 2>/dev/null; do
     s=$(curl -s "$url/stats" 2>/dev/null) && p=$(curl -s "http://127.0.0.1:$health_port/status" 2>/dev/null) &&
       echo "$(date +%s.%N) $s $p" >>"$tmp/samples"
     sleep 1
   done) &
  pids+=($!)
fi
per_conc=$((conc / workers)); per_oconc=$((oconc / workers))
for i in $(seq "$workers"); do
  /usr/bin/time -f "%M" -o "$tmp/worker$i.time" "$bin" worker --nats "nats://127.0.0.1:$nats_port" \
    --coordinator "127.0.0.1:$grpc_port" --concurrency "$per_conc" --optimizer-concurrency "$per_oconc" --log-level error "${worker_extra[@]}" \
    >"$tmp/worker$i.out" 2>&1 &
  pids+=($!)
done
if ! wait "$coord"; then
  echo "bench: coordinator failed" >&2; tail -20 "$tmp/coord.err" >&2; exit 1
fi
for p in "${pids[@]:2}"; do stop TERM "$p"; done
sleep 1
read -r wall user sys rss < "$tmp/coord.time"
[[ -n "$keep" ]] && rm -rf "$keep" && cp -r "$tmp/run" "$keep"
echo "config $config, $workers worker process(es) x $per_conc target + $per_oconc optimizer concurrency, latency $latency, rpm $rpm, tpm $tpm${pad:+, trajectories padded to $pad}"
grep -E '^(baseline|best|final) ' "$tmp/coord.out" || true
go run ./scripts/bench/ideal --latency "$mean" \
  --target-concurrency "$conc" --optimizer-concurrency "$oconc" "$tmp/run"
echo "coordinator: wall ${wall}s, cpu $(python3 -c "print(round($user+$sys,2))")s, peak RSS $((rss/1024)) MB"
python3 - "$tmp/run" <<'PY'
import glob, json, sys
cpu = sorted(json.load(open(p)).get("process_cpu_s", 0) for p in glob.glob(sys.argv[1] + "/steps/step_*/record.json"))
if cpu:
    print("coordinator CPU per step: median %.0f ms, max %.0f ms over %d steps" % (1000 * cpu[len(cpu) // 2], 1000 * cpu[-1], len(cpu)))
PY
if [[ "$tpm" != 0 ]]; then
  python3 - "$tmp/samples" "$tpm" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    t, rest = line.split(" ", 1)
    dec = json.JSONDecoder()
    s, i = dec.raw_decode(rest.strip())
    p, _ = dec.raw_decode(rest.strip()[i:].strip())
    rows.append((float(t), s["input_tokens"] + s["output_tokens"], s["input_tokens"], p.get("pending", 0)))
tpm = float(sys.argv[2])
uses, uses_in = [], []
for a in range(len(rows)):
    if rows[a][0] - rows[0][0] < 60:
        continue  # the first minute spends the bucket's burst
    for b in range(a + 1, len(rows)):
        if rows[b][0] - rows[a][0] >= 60:
            if all(r[3] > 0 for r in rows[a:b + 1]):
                dt = rows[b][0] - rows[a][0]
                uses.append((rows[b][1] - rows[a][1]) / dt * 60 / tpm)
                uses_in.append((rows[b][2] - rows[a][2]) / dt * 60 / tpm)
            break
if uses:
    uses.sort(); uses_in.sort()
    print("tpm use while work was queued (60 s windows after the first minute, %d windows): input+output median %.1f%%, min %.1f%%; input only median %.1f%%"
          % (len(uses), 100 * uses[len(uses) // 2], 100 * uses[0], 100 * uses_in[len(uses_in) // 2]))
else:
    print("tpm use while queued: no full 60 s window with work queued after the first minute")
PY
  curl -s "$url/stats" | python3 -c "import json,sys; s=json.load(sys.stdin); t=$tpm; w=$wall; i=s['input_tokens']; print('tpm use: %d input tokens in %.1fs = %.0f/min against %d; beyond the first minute\'s burst: %.1f%% of the limit' % (i, w, i/w*60, t, 100*(i-t)/(t*w/60)))"
fi
for i in $(seq "$workers"); do
  [[ -s "$tmp/worker$i.time" ]] && echo "worker $i: peak RSS $(( $(tail -1 "$tmp/worker$i.time") / 1024 )) MB"
done
curl -s "$url/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print("sim-llm: requests", s.get("requests"), "served", s.get("served"), "429s", s.get("rate_limited"), "input tokens", s.get("input_tokens"))' 2>/dev/null || true
# The run's own bill (tokens.json) against what the model server billed:
# replies it made, served or not (a cancelled attempt's reply included).
# Calls and tokens must be equal; every reply the server finished after
# its client left (abandoned: a hedge's loser or a cancelled call) must be
# a failed attempt of tokens.json with a cause that cuts a call short, and
# the stage "hedged" must hold exactly the attempts of cause hedged that
# wave hedging withdrew. A mismatch makes the bench fail.
curl -s "$url/stats" >"$tmp/stats.json" 2>/dev/null || true
bill_ok=0
python3 - "$tmp/run/tokens.json" "$tmp/stats.json" <<'PY' || bill_ok=1
import json, sys
tok = json.load(open(sys.argv[1]))
t = tok["total"]
s = json.load(open(sys.argv[2]))
mine = (t["calls"], t["input_tokens"], t["output_tokens"])
theirs = (s.get("billed", 0), s.get("billed_input_tokens", 0), s.get("billed_output_tokens", 0))
c = t.get("failure_causes", {})
causes = ", ".join("%s %d" % kv for kv in sorted(c.items())) or "none"
hedged_rows = sum(r["calls"] for r in tok.get("rows", []) if r["stage"] == "hedged")
hedged_row_causes = sum(r.get("failure_causes", {}).get("hedged", 0) for r in tok.get("rows", []) if r["stage"] == "hedged")
cut = sum(c.get(k, 0) for k in ("hedged", "cancelled", "stall", "timeout"))
abandoned = s.get("abandoned", 0)
checks = [("calls and tokens", mine == theirs),
          ("abandoned replies with a cause", abandoned <= cut),
          ("stage hedged all of cause hedged", hedged_rows == hedged_row_causes)]
print("bill: tokens.json %d calls, %d in + %d out tokens (failed-attempt causes: %s); sim-llm billed %d replies (%d abandoned), %d in + %d out: %s"
      % (mine + (causes,) + theirs[:1] + (abandoned,) + theirs[1:] + ("equal" if mine == theirs else "DIFFERENT",)))
print("bill: stage hedged %d calls, %d of cause hedged; %d abandoned replies against %d attempts cut short (hedged, cancelled, stall, timeout)"
      % (hedged_rows, hedged_row_causes, abandoned, cut))
bad = [name for name, ok in checks if not ok]
print("bill check: " + ("ok" if not bad else "FAILED: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
echo "events.jsonl sha256 $(sha256sum <"$tmp/run/events.jsonl" | cut -c1-16), wall ${wall}s"
exit "$bill_ok"
