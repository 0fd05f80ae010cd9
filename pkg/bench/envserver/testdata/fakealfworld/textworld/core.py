class Wrapper:
    """textworld.core.Wrapper: an instance wraps an env when called with it."""

    def __init__(self, env=None):
        self._wrapped_env = env

    def __call__(self, env):
        self._wrapped_env = env
        return self
