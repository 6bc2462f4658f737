"""Adapters: read existing DP mechanisms as :mod:`persuasive` mechanisms.

* :func:`from_opendp` — an OpenDP measurement of the Laplace / Gaussian / geometric family
  (optionally chained after a transformation, or built with ``opendp.context``);
* :func:`from_dp_event` / :func:`to_dp_event` — dp_accounting ``DpEvent`` objects.

OpenDP and dp_accounting are imported only when an adapter is called, so the core library
works without them; a missing package raises :class:`MissingDependencyError` naming it.
The mapping table and what does not map are in ``docs/adapters.md``.
"""

from persuasive.adapters._deps import MissingDependencyError
from persuasive.adapters.dp_accounting import from_dp_event, to_dp_event
from persuasive.adapters.opendp import OpenDPReading, from_opendp, read_opendp

__all__ = [
    "MissingDependencyError",
    "OpenDPReading",
    "from_dp_event",
    "from_opendp",
    "read_opendp",
    "to_dp_event",
]
