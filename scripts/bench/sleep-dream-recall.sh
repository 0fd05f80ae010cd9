#!/usr/bin/env bash
# What dream rollouts, dream tasks and recall buy a Sleep night, on the sim
# (the table "What they buy, measured on the sim" in docs/sleep.md).
#
#   scripts/bench/sleep-dream-recall.sh [--seeds 5] [--personas "researcher programmer"] \
#       [--bin FILE] [--keep DIR]
#
# For each persona and seed: harvest the persona's sessions once, split the
# mined tasks into two reviewed tasks files of the first 6 and the rest,
# then, for each setting (off; dream: --dream-rollouts 3 --dream-factor 1;
# recall: --recall-k 4; both), run night 1 on the first file with
# everything off and night 2 on the second under the setting, in a state
# dir of its own whose config sets the seed. Prints one TSV line per night 2
# to stderr as it goes, then the Markdown table of the means over the
# seeds: train tasks, baseline and fresh final val score, gain, tokens, and
# tokens relative to "off". Exits 1 if a night 2 was not accepted.
#
# --bin runs an already built skillfleet instead of building this tree's;
# --keep keeps the state dirs under DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=5 personas="researcher programmer" prebuilt="" keep=""
while (($#)); do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --personas) personas=$2; shift 2 ;;
    --bin) prebuilt=$(realpath "$2"); shift 2 ;;
    --keep) keep=$(realpath -m "$2"); shift 2 ;;
    *) echo "sleep-dream-recall.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v jq >/dev/null || { echo "sleep-dream-recall.sh: needs jq" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$prebuilt
if [[ -z $bin ]]; then
  bin=$work/skillfleet
  go build -o "$bin" ./cmd/skillfleet
fi
names=(off dream recall both)
flags=("" "--dream-rollouts 3 --dream-factor 1" "--recall-k 4" "--dream-rollouts 3 --dream-factor 1 --recall-k 4")
rows=$work/rows.tsv
: >"$rows"
for persona in $personas; do
  for seed in $(seq 1 "$seeds"); do
    h=$work/$persona-$seed
    mkdir -p "$h"
    "$bin" sleep harvest --persona "$persona" --backend sim --state-dir "$h/harvest" --output "$h/all.json" >/dev/null
    jq '{reviewed: true, tasks: .tasks[:6]}' "$h/all.json" >"$h/n1.json"
    jq '{reviewed: true, tasks: .tasks[6:]}' "$h/all.json" >"$h/n2.json"
    for i in "${!names[@]}"; do
      s=$h/${names[$i]}
      mkdir -p "$s"
      printf 'seed: %s\n' "$seed" >"$s/config.yaml"
      "$bin" sleep run --persona "$persona" --backend sim --state-dir "$s" --tasks-file "$h/n1.json" >/dev/null
      # shellcheck disable=SC2086 # a setting is several flags
      "$bin" sleep run --persona "$persona" --backend sim --state-dir "$s" --tasks-file "$h/n2.json" ${flags[$i]} >/dev/null
      report=$(ls -d "$s"/persona-"$persona"/project/.skillfleet-sleep/staging/night-0002-*/report.json)
      jq -r --arg p "$persona" --arg s "${names[$i]}" --arg seed "$seed" \
        '[$p, $s, $seed, .outcome.action, (.splits.train // 0),
          .outcome.baseline.score, .outcome.final_fresh.score, .outcome.spend.tokens] | @tsv' "$report" | tee -a "$rows" >&2
    done
  done
done
if [[ -n $keep ]]; then
  mkdir -p "$keep" && cp -r "$work"/. "$keep"/ && rm -f "$keep/skillfleet"
fi
awk -F'\t' '
  { k = $1 "\t" $2; if (!(k in n)) order[++m] = k
    n[k]++; tr[k] += $5; b[k] += $6; f[k] += $7; t[k] += $8
    if ($4 != "accept") bad++ }
  END {
    print "| persona | setting | nights | train tasks | baseline | fresh final | gain | tokens | × off |"
    print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for (i = 1; i <= m; i++) {
      k = order[i]; split(k, pk, "\t"); off = pk[1] "\toff"
      x = (off in t) ? sprintf("%.1f", (t[k] / n[k]) / (t[off] / n[off])) : "-"
      printf "| %s | %s | %d | %.1f | %.3f | %.3f | %.3f | %.0f | %s |\n", pk[1], pk[2], n[k], tr[k] / n[k],
        b[k] / n[k], f[k] / n[k], (f[k] - b[k]) / n[k], t[k] / n[k], x
    }
    if (bad) { printf "%d nights were not accepted\n", bad > "/dev/stderr"; exit 1 }
  }' "$rows"
