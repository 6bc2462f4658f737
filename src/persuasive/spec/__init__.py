r"""Specs: a release mechanism and a privacy definition, read from a TOML file.

A spec declares *what* to check — a mechanism :math:`M` and a guarantee
:math:`(\mathcal S, \mathcal Q_x, \kappa, \delta)`-PP (Definition 3) or its expectation variant
(App. C) — and leaves *how* to :func:`persuasive.certify` and :func:`persuasive.audit`. It is the
input of the command line (``persuasive certify SPEC.toml``; see ``docs/cli.md``).

Every table is closed: an unknown key is an error that names the key path and lists the allowed
keys, and every value is checked against the domain declared for it in :data:`MECHANISMS`,
:data:`SCORES`, :data:`PRIOR_CLASSES`, :data:`DEFINITION` and :data:`AUDIT`. Those domains are
the ones of :mod:`persuasive._domains`, which the Python constructors validate with too, so a
value the API accepts the spec accepts, and the other way round (the same declarations drive
the documentation, the command line and the property tests). Errors are
:class:`~persuasive.errors.ValidationError` naming the field, e.g.
``definition.delta must be in [0, 1); got 1.5``.

Examples
--------
>>> from persuasive.spec import spec_from_dict
>>> document = {
...     "mechanism": {"type": "gaussian", "sigma": 1.0},
...     "definition": {"kind": "pp", "kappa": 1.0, "delta": 0.31,
...                    "scores": [{"type": "log"}], "priors": {"class": "neighbours"}},
... }
>>> spec = spec_from_dict(document)
>>> spec.mechanism
GaussianMechanism(sigma=1.0)
>>> spec.definition.kappa, spec.definition.delta
(1.0, 0.31)
>>> mechanism, definition = spec
>>> document["mechanism"]["sigmaa"] = 2.0
>>> spec_from_dict(document)
Traceback (most recent call last):
...
persuasive.errors.ValidationError: unknown key 'mechanism.sigmaa' (did you mean 'sigma'?);
allowed keys in [mechanism] with type = "gaussian": type, sigma
"""

from persuasive.spec.parse import Spec, example_paths, load_spec, spec_from_dict
from persuasive.spec.schema import (
    AUDIT,
    DEFINITION,
    MECHANISMS,
    PRIOR_CLASSES,
    SCORES,
    TOP_LEVEL,
    Param,
)

__all__ = [
    "AUDIT",
    "DEFINITION",
    "MECHANISMS",
    "PRIOR_CLASSES",
    "SCORES",
    "TOP_LEVEL",
    "Param",
    "Spec",
    "example_paths",
    "load_spec",
    "spec_from_dict",
]
