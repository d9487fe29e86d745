"""The subcommands of ``attnlab``, one module each, and the output helper they share (``_output``)."""

from ._output import interrupt

__all__ = ["interrupt"]
