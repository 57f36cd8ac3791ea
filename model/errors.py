"""The ways kafkasim fails, one line each: bad input (status 2) or a live step the real world refused (status 1)."""


class ScenarioError(ValueError):
    """Bad scenario input; the message is one line naming the key, the value and what is allowed."""


class UserError(Exception):
    """Bad input to a live command (a flag, a file, a missing program): one line, exit status 2."""


class LiveError(Exception):
    """A live step failed (a broker did not start, a client crashed): one line naming the step, exit status 1."""
