"""The Sender's choice (eq. 5, Bon et al. 2026): the certified mechanism of greatest utility.

:func:`optimise` is the one entry: it dispatches to :func:`choose_mean` (the releases of a
mean: exact, Gaussian noise, nothing), :func:`choose_table` (the suppression threshold of a
count table) or :func:`choose_linear` (linear statistics: exact, one Gaussian noise sd,
statistics withheld), each against a Receiver class and a target κ. Each returns a
:class:`Choice`: the best certified mechanism, every family considered (with why it is or is
not certified), and the frontier of κ against utility as a table (``to_frame``), a plot
(``plot``) and a report (``to_html``, ``write_report``). See ``docs/choose.md``.
"""

from persuasive.choose.frontier import Candidate, Choice
from persuasive.choose.linear import choose_linear
from persuasive.choose.mean import choose_mean
from persuasive.choose.optimise import optimise
from persuasive.choose.table import choose_table

__all__ = ["Candidate", "Choice", "choose_linear", "choose_mean", "choose_table", "optimise"]
