"""Closed forms shared by the certificates and the numerical engines: the PDP tails and their
inverses (:mod:`~persuasive.closed.pdp`, Prop 6), the risks of Appendix C
(:mod:`~persuasive.closed.divergences`); the directed rounding every certified value goes
through is the foundation module :mod:`persuasive._rounding`. Below :mod:`persuasive.certify` and
:mod:`persuasive.pld`, so that neither imports the other at import time."""
