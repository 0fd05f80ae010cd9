#!/usr/bin/env bash
# Control-plane scale bench (see docs/performance.md, "Control-plane scale
# bench"): N cells at once on 2 campaign processes and a few worker
# processes, against a zero-latency sim-llm, reporting what the control
# plane costs per model call as N grows.
#
#   scripts/bench/scale.sh [--cells 8,384] [--pad 50KB] [--members 2] [--workers 3] \
#       [--concurrency 32] [--optimizer-concurrency 16] [--config configs/demo.yaml] \
#       [--full] [--for 15m [--every 5s]] [--skillfleet PATH] [--keep DIR] [--tap] [--set section.key=value ...]
#
# For each N of --cells it starts a standalone nats-server
# (scripts/bench/natsd), `skillfleet sim-llm` (no latency; --pad pads every
# target reply, and so every trajectory, to that size without changing a
# decision), --workers worker processes and --members campaign processes
# (`campaign --member`, one shared campaign dir, each allowed N/members
# active cells, so all N run at once), for a campaign of the config at
# seeds 1..N in the "tiny" setting (one epoch, 20 selection and 20 test
# items; --full runs the config as it is, e.g. configs/sim_paper.yaml at
# paper scale; --set adds or overrides settings). It prints one row per N:
#
#   - model calls (what sim-llm served) and the wall time;
#   - NATS messages per model call, in (published to the server) and out
#     (delivered by it), from the server's own counters;
#   - campaign CPU per model call: user + system time of the campaign
#     processes (getrusage at their exit) over the calls;
#   - RSS per active run: the campaign processes' peak RSS, summed, over N
#     (every cell runs at once), and the peak RSS of the processes;
#   - each worker's peak RSS.
#
# --tap counts the messages published by subject pattern (acks by kind)
# and prints the counts after each row; the row's out column leaves the
# tap's own deliveries out, and a second row splits the in column into
# running tasks' heartbeats (+WPI, one per quarter AckWait a task is held)
# and the rest.
#
# --for DURATION measures memory over a window instead of to the end, for
# presets whose cells run for hours (configs/sim_paper.yaml with --full):
# once every cell has started, scripts/bench/rss_window.py samples each
# campaign process's VmRSS and VmHWM every --every (5s) for DURATION, then
# the campaign processes get SIGTERM (their cells stop, resumable) and the
# row reports the RSS per active run at a third, two thirds and the end of
# the window, its least-squares trend (MiB per run per minute), the peak,
# and the training steps each cell had decided at the window's start and
# end (min-max over the cells), so the window shows whether it covered the
# cells' first gates. The samples are rss.tsv in the --keep dir, with each
# campaign process's heap profile at the window's end (memberM.heap, for
# `go tool pprof`; $SKILLFLEET_HEAPPROFILE and SIGUSR1).
#
# --skillfleet runs the campaign and workers from a prebuilt binary (for
# example one built from an older commit, to compare); sim-llm and natsd are
# always built from this tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
cells_list=8,384 pad=0 members=2 workers=3 conc=32 oconc=16 config=configs/demo.yaml sfbin="" keep="" tap=""
full="" extra=() window="" every=5s
while (($#)); do
  case "$1" in
    --cells) cells_list=$2; shift 2 ;;
    --pad) pad=$2; shift 2 ;;
    --members) members=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --optimizer-concurrency) oconc=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --skillfleet) sfbin=$(realpath "$2"); shift 2 ;;
    --keep) keep=$(realpath -m "$2"); shift 2 ;;
    --tap) tap=--tap; shift ;;
    --full) full=1; shift ;;
    --for) window=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --set) extra+=(--set "$2"); shift 2 ;;
    *) echo "scale.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
sets=(--set train.num_epochs=1 --set evaluation.sel_env_num=20 --set evaluation.test_env_num=20)
setting="tiny: 1 epoch, 20 selection + 20 test items"
[[ -n "$full" ]] && sets=() setting="as configured"
sets+=("${extra[@]}")
source scripts/lib/fleet.sh
fleet_scratch
fleet_build
bin=${sfbin:-$tmp/skillfleet}

printf '%s\n' "scale bench: $config ($setting), $members campaign processes, $workers workers x $conc target + $oconc optimizer slots, zero latency, trajectory pad $pad, campaign binary ${sfbin:-this tree}"
if [[ -n "$window" ]]; then
  printf '%s\n' "memory window: $window once every cell has started, sampled every $every; the campaign is stopped at its end"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "cells" "model calls" "window" "steps per cell, start → end" \
    "RSS per active run at 1/3, 2/3, end" "trend" "campaign peak RSS (sum)" "peak per active run" "campaign CPU ms / call" "worker peak RSS (max)"
else
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "cells" "model calls" "wall" "journal KB / result" "NATS msgs in / call" "NATS msgs out / call" \
    "campaign CPU ms / call" "campaign peak RSS (sum)" "RSS per active run" "worker peak RSS (max)"
fi
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
IFS=, read -ra ns <<<"$cells_list"
for n in "${ns[@]}"; do
  run=$tmp/n$n
  mkdir -p "$run"
  pids=()
  fleet_servers "$run" --trajectory-pad "$pad" -- $tap
  fleet_campaign_yaml "$run/campaign.yaml" "scale$n" "$n" "$config"
  fleet_workers "$bin" "$workers" "$conc" "$oconc" "$run"
  per=$(((n + members - 1) / members))
  start=$(date +%s.%N)
  mpids=()
  for m in $(seq "$members"); do
    SKILLFLEET_HEAPPROFILE=${window:+$run/member$m.heap} /usr/bin/time -o "$run/member$m.time" -f '%U %S %M' \
      "$bin" campaign --config "$run/campaign.yaml" --out "$run/camp" --nats "$nats" --workers 0 --member "m$m" \
      --max-active-runs "$per" "${sets[@]}" --set runtime.sim_llm=false --set model.backend=openai_compatible \
      --set model.optimizer_base_url="$url" --set model.target_base_url="$url" >"$run/member$m.out" 2>&1 &
    pids+=($!) mpids+=($!)
  done
  failed=0
  if [[ -n "$window" ]]; then
    # The campaign processes themselves, not the /usr/bin/time above them.
    sfpids=()
    for p in "${mpids[@]}"; do
      c=""
      for _ in $(seq 200); do
        c=$(pgrep -P "$p" || true)
        [[ -n "$c" ]] && break
        sleep 0.05
      done
      sfpids+=("$c")
    done
    python3 scripts/bench/rss_window.py sample "$run/camp" "$n" "$window" "$every" "$run/rss.tsv" "${sfpids[@]}" || failed=1
    # SIGUSR1 has each member write its heap profile (memberM.heap), then
    # SIGTERM stops each cell where it is (resumable); a member that has
    # not exited a minute later is killed.
    kill -USR1 "${sfpids[@]}" 2>/dev/null || true
    for m in $(seq "$members"); do
      for _ in $(seq 300); do
        [[ -s "$run/member$m.heap" ]] || ! kill -0 "${sfpids[m - 1]}" 2>/dev/null && break
        sleep 0.1
      done
    done
    kill -TERM "${sfpids[@]}" 2>/dev/null || true
    for _ in $(seq 600); do
      alive=0
      for p in "${sfpids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      ((alive)) || break
      sleep 0.1
    done
    kill -KILL "${sfpids[@]}" 2>/dev/null || true
    for p in "${mpids[@]}"; do wait "$p" || true; done
  else
    for p in "${mpids[@]}"; do wait "$p" || failed=1; done
  fi
  end=$(date +%s.%N)
  if ((failed)); then
    # A cell that failed is reported with the row (its state counts).
    echo "scale.sh: a campaign process exited non-zero at $n cells" >&2
    for f in "$run"/member*.out; do tail -n 5 "$f" >&2; done
  fi
  served=$(curl -s "$url/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["served"])')
  i=0
  for p in "${wpids[@]}"; do
    i=$((i + 1))
    awk '/^VmHWM/ {print $2}' "/proc/$p/status" >"$run/worker$i.hwm"
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${wpids[@]}"; do wait "$p" 2>/dev/null || true; done
  kill -TERM "$natspid" 2>/dev/null || true
  wait "$natspid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  win=""
  [[ -n "$window" && -s "$run/rss.tsv" ]] && win=$(python3 scripts/bench/rss_window.py report "$run/rss.tsv" "$n")
  python3 - "$run" "$n" "$members" "$workers" "$served" "$start" "$end" "$window" "$win" <<'PY'
import json, os, re, sys
run, n, members, workers, served = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
wall = float(sys.argv[7]) - float(sys.argv[6])
window, win = sys.argv[8], json.loads(sys.argv[9]) if sys.argv[9] else None
def rusage(path):
    # /usr/bin/time: user s, system s, max RSS KiB (the last line; a killed
    # process's file starts with a status line).
    u, s, m = open(path).read().split("\n")[-2].split()
    return float(u) + float(s), int(m) * 1024
cpu = rss = 0
for m in range(1, members + 1):
    c, r = rusage(os.path.join(run, "member%d.time" % m))
    cpu, rss = cpu + c, rss + r
wrss = max(int(open(os.path.join(run, "worker%d.hwm" % w)).read() or 0) * 1024 for w in range(1, workers + 1))
traffic = re.search(r"nats traffic: (\d+) messages in, (\d+) out", open(os.path.join(run, "nats.log")).read())
nin, nout = int(traffic.group(1)), int(traffic.group(2))
tapped = re.search(r"tap total (\d+) heartbeats (\d+)", open(os.path.join(run, "nats.log")).read())
if tapped:
    # Every message published was delivered once more, to the tap.
    nout -= int(tapped.group(1))
camp = json.load(open(os.path.join(run, "camp", "campaign.json")))
states = {}
for c in camp["cells"]:
    states[c["state"]] = states.get(c["state"], 0) + 1
done = states.get("done", 0)
mib = 1 << 20
if window:
    if not win:
        sys.exit("scale.sh: no RSS sample at %d cells (see the messages above)" % n)
    print("| %d | %d | %d s | %d-%d → %d-%d | %.1f / %.1f / %.1f MiB | %+.2f MiB / run / min | %.0f MiB | %.1f MiB | %.3f | %.0f MiB |" % (
        n, served, win["window_s"], win["steps_start"][0], win["steps_start"][1], win["steps_end"][0], win["steps_end"][1],
        win["rss_third"], win["rss_two_thirds"], win["rss_end"], win["slope"], win["hwm_sum"], win["hwm_per_run"],
        1000 * cpu / served, wrss / mib))
    if win["steps_end"][0] == 0:
        print("scale.sh: some cell decided no training step in the window: make --for longer", file=sys.stderr)
    sys.exit(0)
if done != n:
    print("scale.sh: %d of %d cells done (%s); failed cells:" % (done, n, states), file=sys.stderr)
    for c in camp["cells"]:
        if c["state"] != "done":
            print("  %s: %s" % (c["name"], c.get("error", "")), file=sys.stderr)
journal = 0
for c in camp["cells"]:
    p = os.path.join(run, "camp", c["dir"], "results.journal")
    if os.path.exists(p):
        journal += os.path.getsize(p)
print("| %d | %d | %.0f s | %.1f | %.2f | %.2f | %.3f | %.0f MiB | %.1f MiB | %.0f MiB |" % (
    n, served, wall, journal / 1024 / served, nin / served, nout / served, 1000 * cpu / served, rss / mib, rss / mib / n, wrss / mib))
if tapped:
    hb = int(tapped.group(2))
    print("|   | of which task heartbeats (+WPI): %.2f in / call; without them %.2f in / call |" % (hb / served, (nin - hb) / served))
PY
  [[ -n "$tap" ]] && grep '^tap ' "$run/nats.log" | head -40
  [[ -n "$keep" ]] && mkdir -p "$keep" && rm -rf "${keep:?}/n$n" && cp -r "$run" "$keep/n$n"
  rm -rf "$run"
done
