#!/usr/bin/env python3
"""Tests of scripts/alfworld_bridge.py against the stand-in textworld/alfworld
modules in pkg/bench/envserver/testdata/fakealfworld, over its real stdio
protocol (a child process per test). Standard library only:

    python3 scripts/alfworld_bridge_test.py

(go test ./pkg/bench/envserver/ runs it too.)
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "pkg", "bench", "envserver", "testdata")
FAKE = os.path.join(TESTDATA, "fakealfworld")
DATA = os.path.join(TESTDATA, "alfdata")
GAME = "valid_seen/pick_and_place_simple-Mug-None-Cabinet-1/trial_1/game.tw-pddl"
WIN = ["go to countertop 1", "take mug 1 from countertop 1", "go to cabinet 1", "put mug 1 in/on cabinet 1"]


class Child:
    """The bridge as a child process; ask sends one request line and reads one answer line."""

    def __init__(self, fake=True):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ALFWORLD_DATA": DATA, "PYTHONDONTWRITEBYTECODE": "1"}
        if fake:
            env["PYTHONPATH"] = FAKE
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "alfworld_bridge.py")], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(self, req):
        line = req if isinstance(req, str) else json.dumps(req)
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        if not out:
            raise AssertionError("bridge stopped answering; stderr: " + self.p.stderr.read())
        return json.loads(out)

    def close(self):
        self.p.stdin.close()
        code = self.p.wait(timeout=10)
        err = self.p.stderr.read()
        self.p.stdout.close()
        self.p.stderr.close()
        return code, err


class BridgeTest(unittest.TestCase):
    def setUp(self):
        self.child = Child()

    def tearDown(self):
        code, self.stderr = self.child.close()
        self.assertEqual(code, 0, self.stderr)

    def test_winning_episode(self):
        r = self.child.ask({"op": "reset", "game": GAME, "seed": 7})
        self.assertNotIn("error", r)
        self.assertEqual(r["task"], "put some mug on cabinet.")
        self.assertTrue(r["observation"].startswith("-= Welcome to TextWorld, ALFRED! =-"))
        # The fake admits "look" plus the next winning action, sorted.
        self.assertEqual(r["admissible_actions"], ["go to countertop 1", "look"])
        sid = r["session"]
        # A wrong action changes nothing and does not end the episode.
        s = self.child.ask({"op": "step", "session": sid, "action": "dance"})
        self.assertEqual((s["observation"], s["done"], s["won"], s["reward"]), ("Nothing happens.", False, False, 0.0))
        for i, a in enumerate(WIN):
            s = self.child.ask({"op": "step", "session": sid, "action": a})
            self.assertNotIn("error", s)
            last = i == len(WIN) - 1
            self.assertEqual((s["done"], s["won"]), (last, last), a)
        self.assertEqual(s["reward"], 1.0)
        self.assertEqual(s["admissible_actions"], [])
        # After the end: failed_precondition; after close: the session is unknown.
        s = self.child.ask({"op": "step", "session": sid, "action": "look"})
        self.assertEqual(s["code"], "failed_precondition")
        self.assertEqual(self.child.ask({"op": "close", "session": sid}), {})
        s = self.child.ask({"op": "step", "session": sid, "action": "look"})
        self.assertEqual(s["code"], "not_found")
        self.assertIn(sid, s["error"])

    def test_sessions_are_independent(self):
        a = self.child.ask({"op": "reset", "game": GAME})["session"]
        b = self.child.ask({"op": "reset", "game": GAME})["session"]
        self.assertNotEqual(a, b)
        self.child.ask({"op": "step", "session": a, "action": WIN[0]})
        # b has not moved: its next admissible action is still the first one.
        s = self.child.ask({"op": "step", "session": b, "action": "look"})
        self.assertEqual(s["admissible_actions"], ["go to countertop 1", "look"])

    def test_errors(self):
        r = self.child.ask({"op": "reset", "game": "valid_seen/nope/game.tw-pddl"})
        self.assertEqual(r["code"], "not_found")
        self.assertIn("valid_seen/nope/game.tw-pddl", r["error"])
        self.assertEqual(self.child.ask({"op": "reset"})["code"], "invalid")
        self.assertEqual(self.child.ask({"op": "step", "session": "alf-99", "action": "look"})["code"], "not_found")
        self.assertEqual(self.child.ask({"op": "fly"})["code"], "invalid")
        self.assertEqual(self.child.ask("{not json")["code"], "invalid")
        self.assertEqual(self.child.ask("[1, 2]")["code"], "invalid")
        sid = self.child.ask({"op": "reset", "game": GAME})["session"]
        self.assertEqual(self.child.ask({"op": "step", "session": sid, "action": 3})["code"], "invalid")
        # Close of an unknown session is not an error.
        self.assertEqual(self.child.ask({"op": "close", "session": "alf-99"}), {})
        self.assertEqual(self.child.ask({"op": "info"}), {"name": "alfworld bridge", "games": []})

    def test_library_noise_stays_off_the_protocol(self):
        # The fake's make() prints to stdout and writes to fd 1; every
        # answer must still be one JSON line, and the noise lands on stderr.
        self.child.ask({"op": "reset", "game": GAME})
        self.child.ask({"op": "info"})
        code, err = self.child.close()
        self.assertEqual(code, 0)
        self.assertIn("fake textworld: making", err)
        self.assertIn("raw write to fd 1", err)
        self.child = Child()  # for tearDown


class WithoutALFWorldTest(unittest.TestCase):
    def test_reset_says_what_is_missing(self):
        child = Child(fake=False)
        try:
            self.assertEqual(child.ask({"op": "info"})["name"], "alfworld bridge")
            r = child.ask({"op": "reset", "game": GAME})
            self.assertEqual(r["code"], "internal")
            self.assertIn("pip install alfworld", r["error"])
        finally:
            self.assertEqual(child.close()[0], 0)


if __name__ == "__main__":
    unittest.main()
