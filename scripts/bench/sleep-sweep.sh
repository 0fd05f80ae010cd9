#!/usr/bin/env bash
# The wall time of `sleep sweep` over configs/sleep/sweep.yaml (2 personas
# x 2 settings x 3 seeds, 12 sim nights) at each --parallel, and whether
# every run gave the same scorecard (docs/sleep.md, "Trying settings
# before you trust them").
#
#   scripts/bench/sleep-sweep.sh [--runs 3] [--parallel "1 2 4 12"] [--bin FILE] [--before FILE]
#
# Each run sweeps into the same output dir (a task's id, and so its split,
# depends on its sandbox's path), removed before the run, the --parallel
# values taking turns. --before FILE also times a skillfleet built before
# sweeps shared a fleet (each night then started a fleet of its own; it
# has no --parallel). Prints one TSV line per run (parallel, wall s,
# scorecard sha256) to stderr, then the median wall per --parallel.
# Exits 1 if two runs' scorecards differ.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=3 pars="1 2 4 12" prebuilt="" before=""
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --parallel) pars=$2; shift 2 ;;
    --bin) prebuilt=$(realpath "$2"); shift 2 ;;
    --before) before=$(realpath "$2"); shift 2 ;;
    *) echo "sleep-sweep.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$prebuilt
if [[ -z $bin ]]; then
  bin=$work/skillfleet
  go build -o "$bin" ./cmd/skillfleet
fi
out=$work/sweep
rows=$work/rows.tsv
: >"$rows"
one() { # label, then the binary and its extra flags
  local label=$1 b=$2 t0 t1 wall sum
  shift 2
  rm -rf "$out"
  t0=$(date +%s.%N)
  "$b" sleep sweep --file configs/sleep/sweep.yaml --output "$out" "$@" >/dev/null
  t1=$(date +%s.%N)
  wall=$(echo "$t1 - $t0" | bc)
  sum=$(sha256sum <"$out/scorecard.md" | cut -c1-16)
  printf '%s\t%.2f\t%s\n' "$label" "$wall" "$sum" | tee -a "$rows" >&2
}
for _ in $(seq 1 "$runs"); do
  if [[ -n $before ]]; then
    one before "$before"
  fi
  for p in $pars; do
    one "$p" "$bin" --parallel "$p"
  done
done
echo "| --parallel | runs | median wall (s) |"
echo "|---|---|---|"
for label in $([[ -n $before ]] && echo before) $pars; do
  awk -F'\t' -v l="$label" '$1 == l {print $2}' "$rows" | sort -n |
    awk -v l="$label" '{w[NR] = $1} END {printf "| %s | %d | %.2f |\n", l, NR, (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2}'
done
if (($(cut -f3 "$rows" | sort -u | wc -l) != 1)); then
  echo "sleep-sweep.sh: the runs' scorecards differ" >&2
  exit 1
fi
