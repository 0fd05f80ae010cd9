#!/usr/bin/env bash
# Installs the agent CLIs that skillfleet's exec backend is tested with —
# OpenAI Codex CLI and Anthropic Claude Code, at pinned versions — into a
# project-local, git-ignored directory (default .tools/agents), with npm.
#
# Usage: scripts/install-agents.sh [DIR]
# Needs node and npm (Debian: apt-get install nodejs npm). About 760 MB.
# The binaries end up in DIR/node_modules/.bin/{codex,claude}.
set -euo pipefail

CODEX_VERSION=0.169.0
CLAUDE_VERSION=2.1.328

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.tools/agents}
mkdir -p "$dir"

have() {
	local bin=$dir/node_modules/.bin/$1 want=$2
	[ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q -- "$want"
}

if have codex "$CODEX_VERSION" && have claude "$CLAUDE_VERSION"; then
	echo "install-agents: codex $CODEX_VERSION and claude $CLAUDE_VERSION already in $dir"
	exit 0
fi
command -v npm >/dev/null || { echo "install-agents: npm not found (apt-get install nodejs npm)" >&2; exit 1; }
[ -f "$dir/package.json" ] || echo '{"name":"skillfleet-agents","private":true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
	"@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION"
for b in codex claude; do
	echo "install-agents: $b $("$dir/node_modules/.bin/$b" --version)"
done
