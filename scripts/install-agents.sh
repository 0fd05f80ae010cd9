#!/usr/bin/env bash
# Installs the agent CLIs that skillfleet's exec backend is tested with —
# OpenAI Codex CLI, Anthropic Claude Code, GitHub Copilot CLI, pi and
# opencode, at pinned versions — into a project-local, git-ignored
# directory (default .tools/agents), with npm. Cursor's agent CLI is not
# on npm: its harness is tested on recorded output (backends/exec/testdata).
#
# Usage: scripts/install-agents.sh [DIR]
# Needs node and npm (Debian: apt-get install nodejs npm). About 1.1 GB.
# The binaries end up in DIR/node_modules/.bin/{codex,claude,copilot,pi,opencode}.
set -euo pipefail

CODEX_VERSION=0.169.0
CLAUDE_VERSION=2.1.328
COPILOT_VERSION=1.0.102
PI_VERSION=0.73.1
OPENCODE_VERSION=1.18.33

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.tools/agents}
mkdir -p "$dir"

have() {
	local bin=$dir/node_modules/.bin/$1 want=$2
	[ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q -- "$want"
}

if have codex "$CODEX_VERSION" && have claude "$CLAUDE_VERSION" && have copilot "$COPILOT_VERSION" &&
	have pi "$PI_VERSION" && have opencode "$OPENCODE_VERSION"; then
	echo "install-agents: codex $CODEX_VERSION, claude $CLAUDE_VERSION, copilot $COPILOT_VERSION, pi $PI_VERSION and opencode $OPENCODE_VERSION already in $dir"
	exit 0
fi
command -v npm >/dev/null || { echo "install-agents: npm not found (apt-get install nodejs npm)" >&2; exit 1; }
[ -f "$dir/package.json" ] || echo '{"name":"skillfleet-agents","private":true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
	"@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
	"@github/copilot@$COPILOT_VERSION" "@mariozechner/pi-coding-agent@$PI_VERSION" "opencode-ai@$OPENCODE_VERSION"
for b in codex claude copilot pi opencode; do
	echo "install-agents: $b $("$dir/node_modules/.bin/$b" --version 2>&1 | head -1)"
done
