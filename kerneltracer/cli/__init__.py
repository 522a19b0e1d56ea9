"""The ``kerneltracer`` command line. Heavy imports happen inside commands, never here.

Its face is ``main`` (the console script); nothing else imports the CLI.
"""

__all__ = ["main"]
