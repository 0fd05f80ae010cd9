class EnvInfos:
    def __init__(self, **kw):
        self.requested = kw
