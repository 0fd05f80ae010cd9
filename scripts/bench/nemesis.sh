#!/usr/bin/env bash
# The nemesis test (TestNemesis in cmd/skillfleet; docs/deploy.md, "Every fault at once") on a
# long schedule: a campaign on a three-node NATS cluster, two campaign
# members and three workers, under seeded random kills, partitions and
# sim-llm faults for --duration, then the invariants. It prints the
# schedule as it runs and ends with one summary line: faults injected,
# longest pause, billed calls against the undisturbed campaign, cells
# identical to the cells alone. The exit status is the test's.
#
#   scripts/bench/nemesis.sh [--seed N] [--duration 5m] [--cells N] [--log FILE] [--keep DIR]
#
# Without --seed a seed is drawn and printed; the same --seed replays the
# schedule (the faults' order, targets and timing; the fleet's own timing
# still varies). --cells defaults to 8 for each minute of --duration
# (started), so that the campaign lasts about as long as the schedule.
# --keep DIR copies each cell whose decisions differ from the cell alone
# (its run dir and the reference's) under DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
seed= duration=5m cells= log= keep=
while (($#)); do
  case "$1" in
    --seed) seed=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "nemesis.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$seed" ]] || seed=$((RANDOM * 32768 + RANDOM))
# The go test timeout: the schedule plus an hour for two campaigns and the
# references on a loaded machine.
secs=$(python3 -c "
import re,sys
s='$duration'; t=0
for n,u in re.findall(r'([0-9.]+)(h|ms|m|s)', s): t+=float(n)*{'h':3600,'m':60,'s':1,'ms':0.001}[u]
print(int(t))")
if ((secs <= 0)); then echo "nemesis.sh: --duration $duration: not a positive duration such as 5m" >&2; exit 2; fi
export SKILLFLEET_NEMESIS_SEED=$seed SKILLFLEET_NEMESIS_DURATION=$duration
[[ -n "$cells" ]] && export SKILLFLEET_NEMESIS_CELLS=$cells
[[ -n "$keep" ]] && export SKILLFLEET_NEMESIS_KEEP=$(realpath -m "$keep")
[[ -n "$log" ]] || log=$(mktemp /tmp/skillfleet-nemesis.XXXXXX.log)
echo "nemesis: seed $seed, duration $duration; full log: $log"
set +e
go test -count=1 -v -run '^TestNemesis$' -timeout "$((secs + 3600))s" ./cmd/skillfleet/ 2>&1 | tee "$log" |
  grep --line-buffered -E 'nemesis_e2e_test.go|^(--- |FAIL|ok )' | sed -u 's/^ *nemesis_e2e_test.go:[0-9]*: //'
status=${PIPESTATUS[0]}
set -e
echo "nemesis: seed $seed, duration $duration: $(grep -o 'nemesis summary: .*' "$log" | tail -1 || echo 'no summary (see the log)')"
exit "$status"
