#!/usr/bin/env bash
# Do the training loop's mechanisms matter on the simulated benchmark?
#
# Trains the sim benchmark over several world/training seeds with four
# variants and prints one table: mean best and final test score, mean
# tokens (input + output), mean accepted/rejected steps, and per-seed
# values. SIMULATOR.md requires each ablation to be measurably worse or to
# cost more tokens than the defaults.
#
#   defaults         the preset's config as is
#   no_gate          evaluation.use_gate=false (every candidate force-accepted)
#   no_step_buffer   optimizer.use_step_buffer=false (analysts never see rejected edits)
#   lr50             optimizer.learning_rate=50, min_learning_rate=2 (budget raised far)
#
# Usage: scripts/mechanisms.sh [--preset demo|paper] [--seeds "1 2 3 4 5"]
#                              [--variants "defaults no_gate ..."] [--jobs N]
#                              [--keep DIR]
#
# --preset picks configs/demo.yaml (default; ~1 s a run) or
# configs/sim_paper.yaml (~7 s a run). Each seed S sets env.seed=S and
# train.seed=S and starts from world S's own seed skill. --jobs runs that
# many trainings at once (default 1). --keep writes the runs under DIR and
# keeps them; otherwise they go to a temporary directory that is removed.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=demo
seeds="1 2 3 4 5"
variants="defaults no_gate no_step_buffer lr50"
jobs=1
keep=""
while [[ $# -gt 0 ]]; do
	case "$1" in
	--preset) preset="$2"; shift 2 ;;
	--seeds) seeds="$2"; shift 2 ;;
	--variants) variants="$2"; shift 2 ;;
	--jobs) jobs="$2"; shift 2 ;;
	--keep) keep="$2"; shift 2 ;;
	-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$preset" in
demo) config=configs/demo.yaml; simpreset=demo ;;
paper) config=configs/sim_paper.yaml; simpreset=paper ;;
*) echo "--preset must be demo or paper" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="$tmp/runs"
if [[ -n "$keep" ]]; then
	out="$keep"
fi
mkdir -p "$out"

echo "== build" >&2
go build -o "$tmp/skillfleet" ./cmd/skillfleet
go build -o "$tmp/mechanisms" ./scripts/mechanisms

variant_args() {
	case "$1" in
	defaults) ;;
	no_gate) echo "--set evaluation.use_gate=false" ;;
	no_step_buffer) echo "--set optimizer.use_step_buffer=false" ;;
	lr50) echo "--set optimizer.learning_rate=50 --set optimizer.min_learning_rate=2" ;;
	*) echo "unknown variant $1" >&2; return 1 ;;
	esac
}

# One line per run: variant seed.
plan="$tmp/plan"
: >"$plan"
for s in $seeds; do
	"$tmp/mechanisms" seed-skill -preset "$simpreset" -seed "$s" -out "$tmp/seed_skill_$s.md"
	for v in $variants; do
		variant_args "$v" >/dev/null
		echo "$v $s" >>"$plan"
	done
done

run_one() {
	local v=$1 s=$2 dir="$out/$1-$2"
	rm -rf "$dir"
	# shellcheck disable=SC2046
	if ! "$tmp/skillfleet" train --config "$config" --out "$dir" \
		--set "env.seed=$s" --set "train.seed=$s" --set "env.skill_init=$tmp/seed_skill_$s.md" \
		$(variant_args "$v") >"$tmp/log-$v-$s" 2>&1; then
		echo "run $v seed $s failed:" >&2
		tail -20 "$tmp/log-$v-$s" >&2
		return 1
	fi
	echo "   $v seed $s done" >&2
}
export -f run_one variant_args
export tmp out config

echo "== train: preset $preset, seeds [$seeds], $(wc -l <"$plan") runs, $jobs at a time" >&2
status=0
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"' <"$plan" || status=$?

echo
echo "preset $preset ($config), seeds: $seeds"
"$tmp/mechanisms" table -variants "$(echo $variants | tr ' ' ',')" -seeds "$(echo $seeds | tr ' ' ',')" "$out"
exit "$status"
