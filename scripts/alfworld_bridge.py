#!/usr/bin/env python3
"""ALFWorld behind skillfleet's environment-server protocol.

`skillfleet envserver --bridge python3 scripts/alfworld_bridge.py` starts
this script and serves the gRPC protocol in front of it; the script speaks
one JSON object per line on stdin/stdout:

  {"op": "info"}                           -> {"name": ..., "games": []}
  {"op": "reset", "game": PATH, "seed": N} -> {"session", "observation", "task", "admissible_actions"}
  {"op": "step", "session": S, "action": A}-> {"observation", "reward", "done", "won", "admissible_actions"}
  {"op": "close", "session": S}            -> {}

Errors come back as {"error": "...", "code": "not_found" | "failed_precondition" | "invalid"}.
Game paths are relative to $ALFWORLD_DATA (the json_2.1.1 tree that
`alfworld-download` fetches) unless absolute. Needs the alfworld and
textworld packages (pip install alfworld).
"""
import json
import os
import sys


def load_backend():
    import textworld
    import textworld.gym
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    return textworld, textworld.gym, AlfredDemangler


def first(x):
    """Batched TextWorld values come as one-element lists."""
    if isinstance(x, (list, tuple)) and len(x) == 1:
        return x[0]
    return x


class Bridge:
    def __init__(self, max_steps=1000):
        self.tw, self.gym, self.demangler = load_backend()
        self.sessions = {}
        self.done = {}
        self.next = 0
        self.max_steps = max_steps

    def path(self, game):
        if os.path.isabs(game):
            return game
        root = os.environ.get("ALFWORLD_DATA", "")
        return os.path.join(root, game)

    def info(self, req):
        return {"name": "alfworld bridge", "games": []}

    def reset(self, req):
        game = self.path(req.get("game", ""))
        if not os.path.exists(game):
            return {"error": "unknown game %r (looked for %s)" % (req.get("game"), game), "code": "not_found"}
        infos = self.tw.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env_id = self.gym.register_game(game, infos, max_episode_steps=self.max_steps, wrappers=[self.demangler()])
        env = self.gym.make(env_id)
        obs, info = env.reset()
        self.next += 1
        sid = "a%d" % self.next
        self.sessions[sid] = env
        self.done[sid] = False
        obs = first(obs)
        task = ""
        marker = "Your task is to: "
        if marker in obs:
            task = obs.split(marker, 1)[1].strip()
        return {"session": sid, "observation": obs, "task": task,
                "admissible_actions": list(first(info.get("admissible_commands", [])) or [])}

    def step(self, req):
        sid = req.get("session", "")
        env = self.sessions.get(sid)
        if env is None:
            return {"error": "unknown session %r" % sid, "code": "not_found"}
        if self.done[sid]:
            return {"error": "session %r: the episode is over" % sid, "code": "failed_precondition"}
        obs, score, done, info = env.step(req.get("action", "look"))
        won = bool(first(info.get("won", False)))
        done = bool(first(done)) or won
        self.done[sid] = done
        return {"observation": first(obs), "reward": float(first(score) or 0), "done": done, "won": won,
                "admissible_actions": list(first(info.get("admissible_commands", [])) or [])}

    def close(self, req):
        env = self.sessions.pop(req.get("session", ""), None)
        self.done.pop(req.get("session", ""), None)
        if env is not None and hasattr(env, "close"):
            env.close()
        return {}


def main():
    try:
        bridge = Bridge()
    except ImportError as e:
        sys.stderr.write("alfworld_bridge: ALFWorld is not installed (pip install alfworld): %s\n" % e)
        return 3
    ops = {"info": bridge.info, "reset": bridge.reset, "step": bridge.step, "close": bridge.close}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            fn = ops.get(req.get("op"))
            resp = fn(req) if fn else {"error": "unknown op %r" % req.get("op"), "code": "invalid"}
        except Exception as e:  # a broken game must not kill the bridge
            resp = {"error": "%s: %s" % (type(e).__name__, e), "code": "internal"}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
