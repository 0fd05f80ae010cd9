#!/usr/bin/env python3
"""ALFWorld behind skillfleet's environment-server protocol.

`skillfleet envserver --listen ADDR --bridge -- python3 scripts/alfworld_bridge.py`
starts this script as a child process and serves the gRPC protocol
(proto/skillfleet/envserver/v1) in front of it. The script itself needs only
the standard library plus ALFWorld; it speaks one JSON object per line on
stdin/stdout, one answer line per request line:

  {"op": "info"}                            -> {"name": ..., "games": []}
  {"op": "reset", "game": PATH, "seed": N}  -> {"session", "observation", "task", "admissible_actions"}
  {"op": "step", "session": S, "action": A} -> {"observation", "reward", "done", "won", "admissible_actions"}
  {"op": "close", "session": S}             -> {}

Errors come back as {"error": "...", "code": C} with C one of not_found
(unknown game or session), failed_precondition (step after the episode
ended), invalid (bad request) or internal (the game raised).

Game paths are relative to $ALFWORLD_DATA (where `alfworld-download` put
json_2.1.1; ALFWorld's default ~/.cache/alfworld when unset) unless absolute. ALFWorld comes from `pip install alfworld`
(which brings textworld); it is imported lazily, so `info` and the error
paths work without it.

Each session is one TextWorld gym environment registered for its game file
without a batch size, so reset and step take and return single values
(step takes a command string, not a list).
"""
import json
import os
import sys

# How many steps TextWorld allows before it ends an episode itself; the
# Go client stops at its own max_steps long before this.
TEXTWORLD_STEP_LIMIT = 1000

TASK_MARKER = "Your task is to: "


class Backend:
    """The parts of textworld and alfworld the bridge calls."""

    def __init__(self):
        import textworld
        import textworld.gym
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        self.textworld = textworld
        self.gym = textworld.gym
        self.demangler = AlfredDemangler
        self.infos = AlfredInfos

    def open(self, gamefile):
        """Registers and makes a single-game environment (ALFWorld's own
        wrappers: readable object names, the game file in the infos)."""
        request = self.textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env_id = self.gym.register_game(gamefile, request, max_episode_steps=TEXTWORLD_STEP_LIMIT,
                                        wrappers=[self.demangler(), self.infos])
        return self.gym.make(env_id)


class Error(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def task_of(observation):
    """The goal sentence ALFWorld puts at the end of the first observation."""
    if TASK_MARKER not in observation:
        return ""
    return observation.split(TASK_MARKER, 1)[1].strip().splitlines()[0].strip()


def actions_of(infos):
    acts = infos.get("admissible_commands") or []
    if isinstance(acts, str):
        raise Error("internal", "admissible_commands is a string, expected a list: %r" % acts[:80])
    return [str(a) for a in acts]


class Bridge:
    def __init__(self, backend_factory=Backend):
        self.backend_factory = backend_factory
        self.backend = None
        self.sessions = {}  # session -> [env, done]
        self.counter = 0

    def path(self, game):
        if os.path.isabs(game):
            return game
        root = os.environ.get("ALFWORLD_DATA") or os.path.expanduser("~/.cache/alfworld")
        return os.path.join(root, game)

    def info(self, req):
        # ALFWorld has thousands of game files; clients name them by path.
        return {"name": "alfworld bridge", "games": []}

    def reset(self, req):
        game = req.get("game")
        if not isinstance(game, str) or not game.strip():
            raise Error("invalid", "reset: game must be a non-empty string (a game file path)")
        path = self.path(game)
        if not os.path.isfile(path):
            raise Error("not_found", "unknown game %r (no file at %s)" % (game, path))
        if self.backend is None:
            try:
                self.backend = self.backend_factory()
            except ImportError as e:
                raise Error("internal", "ALFWorld is not installed (pip install alfworld): %s" % e)
        env = self.backend.open(path)
        obs, infos = env.reset()
        self.counter += 1
        sid = "alf-%d" % self.counter
        self.sessions[sid] = [env, False]
        return {"session": sid, "observation": str(obs), "task": task_of(str(obs)),
                "admissible_actions": actions_of(infos)}

    def session(self, req):
        sid = req.get("session")
        if sid not in self.sessions:
            raise Error("not_found", "unknown session %r" % (sid,))
        return sid, self.sessions[sid]

    def step(self, req):
        sid, s = self.session(req)
        if s[1]:
            raise Error("failed_precondition", "session %r: the episode is over" % sid)
        action = req.get("action")
        if not isinstance(action, str):
            raise Error("invalid", "step: action must be a string")
        obs, score, done, infos = s[0].step(action)
        won = bool(infos.get("won", False))
        done = bool(done) or won
        s[1] = done
        return {"observation": str(obs), "reward": float(score or 0), "done": done, "won": won,
                "admissible_actions": [] if done else actions_of(infos)}

    def close(self, req):
        s = self.sessions.pop(req.get("session"), None)
        if s is not None and hasattr(s[0], "close"):
            s[0].close()
        return {}

    def handle(self, line):
        """One request line to one answer object."""
        try:
            req = json.loads(line)
        except ValueError as e:
            return {"error": "unreadable request: %s" % e, "code": "invalid"}
        if not isinstance(req, dict):
            return {"error": "a request must be a JSON object", "code": "invalid"}
        op = {"info": self.info, "reset": self.reset, "step": self.step, "close": self.close}.get(req.get("op"))
        if op is None:
            return {"error": "unknown op %r" % (req.get("op"),), "code": "invalid"}
        try:
            return op(req)
        except Error as e:
            return {"error": str(e), "code": e.code}
        except Exception as e:  # a broken game must not take the bridge down
            return {"error": "%s: %s" % (type(e).__name__, e), "code": "internal"}


def protocol_stdout():
    """Keeps stdout for the protocol alone: the answers go to a duplicate of
    file descriptor 1, and fd 1 itself (where TextWorld, its PDDL planner's
    C code or a stray print would write) is pointed at stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def main(stdin=sys.stdin, stdout=None):
    stdout = stdout or protocol_stdout()
    bridge = Bridge()
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(bridge.handle(line)) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
