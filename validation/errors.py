"""The two ways a live step fails: the user asked for something impossible, or the real world did not cooperate."""


class UserError(Exception):
    """Bad input (a flag, a file, a missing program): one line, exit status 2."""


class LiveError(Exception):
    """A live step failed (a broker did not start, a client crashed): one line naming the step, exit status 1."""
