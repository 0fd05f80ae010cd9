#!/usr/bin/env bash
# Rebuilds the run-dir fixtures of an earlier skillfleet: the binary of an
# earlier commit of this repository (a git worktree at that commit, built
# with go build) trains the demo and the paper preset and is killed with
# SIGKILL mid-run; the run dirs it leaves are the fixtures that
# TestHistoryRunDirsResumeWithTheSameDecisions resumes with this build.
#
#   scripts/history-fixtures.sh [COMMIT]
#
# COMMIT defaults to the one recorded in cmd/skillfleet/testdata/history/commit.
# The fixtures are written to cmd/skillfleet/testdata/history/{demo,sim_paper}.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dest=cmd/skillfleet/testdata/history
commit=$(git rev-parse --verify "${1:-$(cat "$dest/commit")}^{commit}")
work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach "$work/src" "$commit" >/dev/null
echo "history-fixtures: building skillfleet at $commit" >&2
(cd "$work/src" && go build -o "$work/skillfleet" ./cmd/skillfleet)

# train_killed CONFIG EVENTS OUT: trains CONFIG into OUT with the old
# binary and kills it with SIGKILL once events.jsonl holds EVENTS lines.
train_killed() {
  local config=$1 events=$2 out=$3
  (cd "$work/src" && exec "$work/skillfleet" train --config "$config" --out "$out" --log-level warn) >"$work/log" 2>&1 &
  local pid=$!
  until [[ -f $out/events.jsonl ]] && (( $(wc -l <"$out/events.jsonl") >= events )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "history-fixtures: $config ended before $events events; its log:" >&2
      cat "$work/log" >&2
      exit 1
    fi
    sleep 0.02
  done
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  echo "history-fixtures: $config killed after $(wc -l <"$out/events.jsonl") events" >&2
}

rm -rf "${dest:?}/demo" "${dest:?}/sim_paper"
mkdir -p "$dest"
train_killed configs/demo.yaml 3 "$root/$dest/demo"
train_killed configs/sim_paper.yaml 4 "$root/$dest/sim_paper"
echo "$commit" >"$dest/commit"
du -sh "$dest"/* >&2
