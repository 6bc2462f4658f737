"""The Sender's choice (eq. 5, Bon et al. 2026): the certified mechanism of greatest utility.

:func:`choose_mean` searches the releases of a mean (exact, Gaussian noise, nothing) and
:func:`choose_table` the suppression threshold of a count table, each against a Receiver
class and a target κ, and returns a :class:`Choice`: the best certified mechanism, every
family considered (with why it is or is not certified), and the frontier of κ against utility
as a table (``to_frame``) and a plot (``plot``). See ``docs/choose.md``.
"""

from persuasive.choose.frontier import Candidate, Choice
from persuasive.choose.mean import choose_mean
from persuasive.choose.table import choose_table

__all__ = ["Candidate", "Choice", "choose_mean", "choose_table"]
