# Sourced by the benchmarks in scripts/bench that start a fleet of real
# processes on loopback: `skillfleet sim-llm`, a NATS server
# (scripts/bench/natsd), worker processes and a campaign. The caller runs
# from the repository root with `set -euo pipefail`.

# fleet_scratch makes the scratch directory $tmp and the array pids, and
# arranges that on exit every process in pids, and each one's children, is
# killed and $tmp is removed (a process started under /usr/bin/time has the
# real one as its child).
fleet_scratch() {
  tmp=$(mktemp -d)
  pids=()
  trap fleet_cleanup EXIT
}

fleet_cleanup() {
  local kids=() p
  # The children are listed while their parents live (a dead parent's
  # children move to init), then all go by the kill builtin.
  if ((${#pids[@]})); then
    mapfile -t kids < <(pgrep -P "$(IFS=,; echo "${pids[*]}")" || true)
  fi
  for p in "${kids[@]}" "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}

# fleet_build builds this tree's skillfleet to $tmp/skillfleet and the NATS
# server to $tmp/natsd.
fleet_build() {
  go build -o "$tmp/skillfleet" ./cmd/skillfleet
  go build -o "$tmp/natsd" ./scripts/bench/natsd
}

# fleet_port prints a free TCP port on 127.0.0.1.
fleet_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# fleet_wait_port PORT waits up to 10 s for something to listen on
# 127.0.0.1:PORT; it fails when nothing does.
fleet_wait_port() {
  for _ in $(seq 200); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# fleet_servers DIR [SIM_LLM_FLAG...] [-- NATSD_FLAG...] starts
# $tmp/skillfleet sim-llm and $tmp/natsd (store DIR/nats) on free loopback
# ports with the given extra flags, logging to DIR/sim.log and
# DIR/nats.log, and waits until both listen. It sets sim_port, nats_port,
# url (the sim-llm's OpenAI base URL), nats (the NATS URL) and natspid, and
# adds both processes to pids.
fleet_servers() {
  local dir=$1 sim_flags=()
  shift
  while (($#)) && [[ $1 != -- ]]; do sim_flags+=("$1"); shift; done
  (($#)) && shift
  sim_port=$(fleet_port) nats_port=$(fleet_port)
  "$tmp/skillfleet" sim-llm --addr "127.0.0.1:$sim_port" "${sim_flags[@]}" >"$dir/sim.log" 2>&1 &
  pids+=($!)
  "$tmp/natsd" --addr "127.0.0.1:$nats_port" --store "$dir/nats" "$@" >"$dir/nats.log" 2>&1 &
  natspid=$!
  pids+=($natspid)
  if ! fleet_wait_port "$nats_port" || ! fleet_wait_port "$sim_port"; then
    echo "$(basename "$0"): sim-llm or natsd did not start:" >&2
    tail -n 5 "$dir/sim.log" "$dir/nats.log" >&2
    return 1
  fi
  url="http://127.0.0.1:$sim_port/v1"
  nats="nats://127.0.0.1:$nats_port"
}

# fleet_campaign_yaml FILE NAME CELLS CONFIG writes a campaign file: CONFIG
# at seeds 1..CELLS, all of them active at once.
fleet_campaign_yaml() {
  {
    echo "name: $2"
    echo "max_active_runs: $3"
    echo "no_skill: false"
    echo "matrix:"
    echo "  configs: [$(realpath "$4")]"
    echo "  seeds: [$(seq -s, 1 "$3")]"
  } >"$1"
}

# fleet_workers BIN N CONC OCONC DIR [PROFDIR] starts N `BIN worker`
# processes on $nats with CONC target and OCONC optimizer slots each,
# logging to DIR/workerI.out; with PROFDIR each writes its CPU profile to
# PROFDIR/workerI.pprof when it stops. It sets the array wpids and adds
# the workers to pids.
fleet_workers() {
  local bin=$1 n=$2 conc=$3 oconc=$4 dir=$5 prof=${6:-}
  wpids=()
  for i in $(seq "$n"); do
    SKILLFLEET_CPUPROFILE=${prof:+$prof/worker$i.pprof} "$bin" worker --nats "$nats" --concurrency "$conc" \
      --optimizer-concurrency "$oconc" --log-level error >"$dir/worker$i.out" 2>&1 &
    pids+=($!) wpids+=($!)
  done
}
