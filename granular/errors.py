"""User-facing errors (warnings and notes go through :mod:`logging`).

A :class:`GranularError` carries a message meant for the user (what was wrong
and where); the CLI prints it without a traceback.
"""


class GranularError(Exception):
    """Bad input or a failed step, with a message that says what and where."""
