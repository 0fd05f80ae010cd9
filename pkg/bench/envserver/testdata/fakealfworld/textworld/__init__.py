"""Stand-in for textworld (see ../README.md)."""
from textworld import core


class EnvInfos:
    def __init__(self, won=False, admissible_commands=False, extras=()):
        self.won = won
        self.admissible_commands = admissible_commands
        self.extras = list(extras)
