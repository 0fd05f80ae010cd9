#!/usr/bin/env python3
"""Prints each top-level test's seconds from `go test -json` files, longest
first: from its last start (run, or cont after a pause) to the end of its
last subtest. gotestsum's slowest list gives 0 s for a test whose subtests
run in parallel; scripts/cmd-test-seconds.txt takes these figures.

    scripts/cmd-test-seconds.py /tmp/skillfleet-test.log.cmd.*.json
"""
import datetime
import json
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under head


def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


start, end = {}, {}
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            name, t = e.get("Test"), e.get("Time")
            if not name or not t:
                continue
            top = name.split("/")[0]
            if name == top and e["Action"] in ("run", "cont"):
                start[top] = when(t)
            if e["Action"] in ("pass", "fail", "skip"):
                end[top] = max(end.get(top, when(t)), when(t))
rows = [(max(1, round((end[k] - start[k]).total_seconds())), k) for k in end if k in start]
for secs, name in sorted(rows, key=lambda r: (-r[0], r[1])):
    print(name, secs)
