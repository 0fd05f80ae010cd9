#!/usr/bin/env bash
# Installs the agent CLIs that skillfleet's exec backend is tested with —
# OpenAI Codex CLI, Anthropic Claude Code, GitHub Copilot CLI, pi and
# opencode, at pinned versions — into a project-local, git-ignored
# directory (default .tools/agents), with npm. Cursor's agent CLI is not
# on npm: its harness is tested on recorded output (backends/exec/testdata).
#
# Usage: scripts/install-agents.sh [DIR]
# Needs node and npm (Debian: apt-get install nodejs npm). About 800 MB.
# The binaries end up in DIR/node_modules/.bin/{codex,claude,copilot,pi,opencode}.
#
# Each set of pinned versions is also kept once per user, in
# ${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/agents-<versions> (or
# $SKILLFLEET_AGENTS_CACHE; empty turns it off): a second clone hard-links
# it into DIR instead of running npm again, which takes minutes on a busy
# machine. The links keep DIR's paths inside the clone, so the agent
# sandbox (which runs as nobody and cannot enter $HOME) still reaches them.
set -euo pipefail
declare -A pkgs

CODEX_VERSION=0.169.0
CLAUDE_VERSION=2.1.328
COPILOT_VERSION=1.0.102
PI_VERSION=0.73.1
OPENCODE_VERSION=1.18.33

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.tools/agents}
mkdir -p "$dir"

# The version is read from the package's own package.json: `pi --version`
# prints nothing when its standard output is a pipe.
pkgs=([codex]=@openai/codex [claude]=@anthropic-ai/claude-code [copilot]=@github/copilot
	[pi]=@mariozechner/pi-coding-agent [opencode]=opencode-ai)
version_of() { # bin
	local f=$dir/node_modules/${pkgs[$1]}/package.json
	[ -f "$f" ] && command -v node >/dev/null && node -p 'require(process.argv[1]).version' "$f" 2>/dev/null
}
have() { # bin version
	[ -x "$dir/node_modules/.bin/$1" ] && [ "$(version_of "$1")" = "$2" ]
}

all() {
	have codex "$CODEX_VERSION" && have claude "$CLAUDE_VERSION" && have copilot "$COPILOT_VERSION" &&
		have pi "$PI_VERSION" && have opencode "$OPENCODE_VERSION"
}
versions="codex $CODEX_VERSION, claude $CLAUDE_VERSION, copilot $COPILOT_VERSION, pi $PI_VERSION and opencode $OPENCODE_VERSION"
if all; then
	echo "install-agents: $versions already in $dir"
	exit 0
fi
# npm rewrites the manifest files in place: each tree gets its own copy
# of them, so a later npm run in one never changes the other.
unshare_top() { # dir
	local f
	for f in package.json package-lock.json; do
		[ -f "$1/$f" ] || continue
		cp "$1/$f" "$1/$f.own" && mv -f "$1/$f.own" "$1/$f" || return 1
	done
}
cache=${SKILLFLEET_AGENTS_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/agents-codex$CODEX_VERSION-claude$CLAUDE_VERSION-copilot$COPILOT_VERSION-pi$PI_VERSION-opencode$OPENCODE_VERSION}
if [ -n "$cache" ] && [ -f "$cache/.complete" ] && [ "$(cd "$cache" && pwd -P)" != "$(cd "$dir" && pwd -P)" ]; then
	# Hard links: the same files, no copy; a cache on another filesystem
	# falls through to npm.
	if cp -al "$cache/." "$dir/" 2>/dev/null && rm -f "$dir/.complete" && unshare_top "$dir" && all; then
		echo "install-agents: $versions linked into $dir from $cache"
		exit 0
	fi
	echo "install-agents: could not link $cache into $dir; installing with npm"
fi
command -v npm >/dev/null || { echo "install-agents: npm not found (apt-get install nodejs npm)" >&2; exit 1; }
[ -f "$dir/package.json" ] || echo '{"name":"skillfleet-agents","private":true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
	"@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
	"@github/copilot@$COPILOT_VERSION" "@mariozechner/pi-coding-agent@$PI_VERSION" "opencode-ai@$OPENCODE_VERSION"
if [ -n "$cache" ] && [ ! -f "$cache/.complete" ]; then
	# Kept for the next clone; a half-made cache is never used (.complete
	# comes last, and a rename makes it appear whole).
	tmp=$cache.tmp.$$
	rm -rf "$tmp"
	if mkdir -p "$(dirname "$cache")" && cp -al "$dir/." "$tmp/" 2>/dev/null && unshare_top "$tmp" && touch "$tmp/.complete" &&
		mv -T "$tmp" "$cache" 2>/dev/null; then
		echo "install-agents: kept in $cache for the next clone"
	fi
	rm -rf "$tmp"
fi
for b in codex claude copilot pi opencode; do
	echo "install-agents: $b $(version_of "$b")"
done
all || { echo "install-agents: npm finished, but not every CLI is at its pinned version in $dir" >&2; exit 1; }
