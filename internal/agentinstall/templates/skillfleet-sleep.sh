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

night() {
	"$SKILLFLEET" sleep "$@" --state-dir "$STATE_DIR"{{range .NightArgs}} {{sh .}}{{end}}
}

# A night's command with the replay target's flags (run and schedule).
replay() {
	night "$@"{{range .TargetArgs}} {{sh .}}{{end}}
}

cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
	# A night for the project in the working directory; its summary names
	# the staged proposal and the adopt command.
	replay run --project "$PWD"
	rc=$?
	echo
	night status --project "$PWD"
	exit $rc
	;;
status)
	night status --project "$PWD"
	if [ -f "$STATE_DIR/recorded-sessions.jsonl" ]; then
		echo "sessions recorded by the session-end hook: $(wc -l <"$STATE_DIR/recorded-sessions.jsonl") ($STATE_DIR/recorded-sessions.jsonl)"
	fi
	;;
schedule)
	# schedule [HH:MM]: a night every day for this project.
	replay schedule --project "$PWD" --at "${1:-03:17}"
	;;
unschedule)
	night unschedule --project "$PWD"
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
	echo "usage: skillfleet-sleep [run | status | schedule [HH:MM] | unschedule | mcp]" >&2
	exit 2
	;;
esac
