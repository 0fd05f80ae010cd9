from textworld.core import Wrapper


class AlfredDemangler(Wrapper):
    def __init__(self, *args, shuffle=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.shuffle = shuffle


class AlfredInfos(Wrapper):
    pass
