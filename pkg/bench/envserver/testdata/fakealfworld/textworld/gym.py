import json
import os

from textworld.core import Wrapper

registry = {}


def register_game(gamefile, request_infos=None, batch_size=None, auto_reset=False,
                  max_episode_steps=50, asynchronous=True, name="", **kwargs):
    if batch_size is not None:
        raise AssertionError("the bridge must use the single-game environment (no batch_size)")
    env_id = "tw-v%d" % len(registry)
    registry[env_id] = dict(gamefile=gamefile, infos=request_infos, max_steps=max_episode_steps,
                            wrappers=list(kwargs.get("wrappers", [])))
    return env_id


class _Env:
    def __init__(self, gamefile, infos, max_steps, wrappers):
        with open(gamefile) as f:
            self.spec = json.load(f)
        self.gamefile = gamefile
        self.infos = infos
        self.max_steps = max_steps
        for w in wrappers:
            ok = isinstance(w, Wrapper) or (isinstance(w, type) and issubclass(w, Wrapper))
            if not ok:
                raise TypeError("wrapper %r is not a textworld Wrapper" % (w,))
        self.wrapper_names = [getattr(w, "__name__", type(w).__name__) for w in wrappers]

    def _infos(self):
        out = {}
        if self.infos.won:
            out["won"] = self.pos == len(self.spec["win"])
        if self.infos.admissible_commands:
            out["admissible_commands"] = sorted(set(["look"] + self.spec["win"][self.pos:self.pos + 1]))
        if "gamefile" in self.infos.extras:
            if "AlfredInfos" not in self.wrapper_names:
                raise KeyError("extra.gamefile requested but no AlfredInfos wrapper supplies it")
            out["extra.gamefile"] = self.gamefile
        return out

    def reset(self):
        self.pos, self.steps = 0, 0
        return self.spec["intro"], self._infos()

    def step(self, command):
        if not isinstance(command, str):
            raise TypeError("single-game step takes a command string, got %s" % type(command).__name__)
        self.steps += 1
        if self.pos < len(self.spec["win"]) and command == self.spec["win"][self.pos]:
            self.pos += 1
            obs = "You did: " + command + "."
        elif command == "look":
            obs = "You look around."
        else:
            obs = "Nothing happens."
        won = self.pos == len(self.spec["win"])
        done = won or self.steps >= self.max_steps
        return obs, 1.0 if won else 0.0, done, self._infos()

    def close(self):
        pass


def make(id):
    # Noise on stdout, as a library (or a planner's C code) may write it;
    # the bridge must keep it out of its protocol stream.
    print("fake textworld: making", id)
    os.write(1, b"fake textworld: raw write to fd 1\n")
    if id not in registry:
        raise ValueError("Attempted to make an unknown environment '%s'" % id)
    r = registry[id]
    if "AlfredDemangler" not in [getattr(w, "__name__", type(w).__name__) for w in r["wrappers"]]:
        raise AssertionError("ALFWorld games need the AlfredDemangler wrapper")
    return _Env(r["gamefile"], r["infos"], r["max_steps"], r["wrappers"])
