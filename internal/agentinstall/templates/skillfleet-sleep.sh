#!/bin/sh
# {{.Marker}}
# The {{.AgentTitle}} front end of skillfleet sleep, written by
# `skillfleet sleep install {{.Agent}}`; `skillfleet sleep uninstall {{.Agent}}`
# removes it. It runs only the skillfleet binary named below.
SKILLFLEET={{sh .Skillfleet}}
STATE_DIR={{sh .StateDir}}

if [ ! -x "$SKILLFLEET" ]; then
	echo "skillfleet-sleep: the skillfleet binary is no longer at $SKILLFLEET; install it again, then run: skillfleet sleep install {{.Agent}}" >&2
	exit 1
fi

# A sleep command with the install's flags, then the user's options: given
# last, an option the user passes wins over the one the install fixed.
night() {
	sub=$1
	shift
	"$SKILLFLEET" sleep "$sub" --state-dir "$STATE_DIR"{{range .NightArgs}} {{sh .}}{{end}} "$@"
}

# A night's command with the replay target's flags too (the commands that
# replay tasks: run, dry-run, handoff and schedule).
replay() {
	sub=$1
	shift
	night "$sub"{{range .TargetArgs}} {{sh .}}{{end}} "$@"
}

# has_flag NAME ARGS...: whether ARGS set --NAME (or -NAME).
has_flag() {
	name=$1
	shift
	for a in "$@"; do
		case "$a" in
		--"$name" | --"$name"=* | -"$name" | -"$name"=*) return 0 ;;
		esac
	done
	return 1
}

# Every subcommand runs on the project in the working directory; the
# user's remaining options follow it to skillfleet unchanged.
cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
	# A night; its summary names the staged proposal and the adopt command.
	replay run --project "$PWD" "$@"
	rc=$?
	echo
	night status --project "$PWD"
	exit $rc
	;;
dry-run)
	# The same night, staging nothing and saving no state.
	replay dry-run --project "$PWD" "$@"
	;;
handoff)
	# handoff [run|dry-run] [options]: a night whose model calls the agent
	# session answers. Exit 3 means prompts are pending (the last line
	# names pending.json); the exit code is skillfleet's, unchanged.
	mode=run
	case "${1:-}" in
	run | dry-run)
		mode=$1
		shift
		;;
	esac
	replay "$mode" --backend handoff --project "$PWD" "$@"
	;;
status)
	night status --project "$PWD" "$@"
	rc=$?
	if [ -f "$STATE_DIR/recorded-sessions.jsonl" ]; then
		echo "sessions recorded by the session-end hook: $(wc -l <"$STATE_DIR/recorded-sessions.jsonl") ($STATE_DIR/recorded-sessions.jsonl)"
	fi
	exit $rc
	;;
harvest)
	# The mined tasks, written to a file for the user to review; without
	# --output, a new file in the state dir.
	if has_flag output "$@"; then
		night harvest --project "$PWD" "$@"
	else
		(umask 077 && mkdir -p "$STATE_DIR/harvest") || exit 1
		night harvest --project "$PWD" --output "$STATE_DIR/harvest/tasks-$(date -u +%Y%m%dT%H%M%SZ).json" "$@"
	fi
	;;
adopt)
	# adopt [--undo] [options]: install the latest accepted proposal (with
	# a backup), or revert the latest adoption. Only on the user's word.
	night adopt --project "$PWD" "$@"
	;;
schedule)
	# schedule [HH:MM] [options]: a night every day for this project.
	at=03:17
	case "${1:-}" in
	"" | -*) ;;
	*)
		at=$1
		shift
		;;
	esac
	replay schedule --project "$PWD" --at "$at" "$@"
	;;
unschedule)
	night unschedule --project "$PWD" "$@"
	;;
mcp)
	# The MCP server (stdio) with the same flags: each --arg reaches every
	# sleep command, each --run-arg the ones that replay.
	exec "$SKILLFLEET" mcp --state-dir "$STATE_DIR"{{range .NightArgs}} --arg={{sh .}}{{end}}{{range .TargetArgs}} --run-arg={{sh .}}{{end}}
	;;
record)
	# The session-end hook: the session's id, transcript and project, read
	# from the hook's JSON on stdin, appended to the state dir's record.
	exec "$SKILLFLEET" sleep record --agent {{.Agent}} --state-dir "$STATE_DIR"
	;;
*)
	echo "usage: skillfleet-sleep [run | dry-run | status | harvest | adopt [--undo] | schedule [HH:MM] | unschedule | handoff [run|dry-run] | mcp] [options]" >&2
	exit 2
	;;
esac
