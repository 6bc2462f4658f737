"""Exceptions raised by :mod:`persuasive`.

Every error raised at the public boundary is a subclass of :class:`PersuasiveError`, so a caller
(and the CLI, which maps them to exit code 2) can catch them in one place.
"""

from __future__ import annotations


class PersuasiveError(Exception):
    """Base class of every error raised by :mod:`persuasive`."""


class ValidationError(PersuasiveError, ValueError):
    """An argument is outside its allowed domain.

    The message names the argument, echoes the bad value and says what is allowed.
    """


class UnsupportedCombinationError(PersuasiveError, NotImplementedError):
    """No exact computation exists in the library for this combination.

    Raised instead of silently approximating: e.g. a posterior for a prior/mechanism pair with no
    conjugate update, or a certificate for a mechanism/definition pair that no theorem covers.
    """
