r"""The registry of theorems, hence every certificate, does not depend on import order (issue 14).

``pp.certify`` asks the registered theorems in order and the first that supports a pair
certifies it. The bounded-error theorems (``persuasive.certify.bounded_error``, section (e) of
docs/release_means.md; ``persuasive.certify.linear_bounded_error``, docs/linear_bounded.md)
insert themselves before the theorems of the classes they refine. ``persuasive.certify`` imports
both, so every process sees the same list. Each check runs in a *fresh* interpreter
(``subprocess``), where nothing but the code under test has been imported.

The oracle for the κ values is the closed form of the exact release written out here:
:math:`\min(r_1 + \log r_2,\ \log r_2 + 2 r_0 r_2 \sqrt{c r_1},\ \log r_2 + r_0^2)`,
:math:`c = 1 - 1/r_2` (docs/release_means.md (e), docs/linear_bounded.md).
"""

from __future__ import annotations

import base64
import json
import math
import os
import pickle
import subprocess
import sys

import pytest

import persuasive as pp
from persuasive.certify import THEOREMS
from persuasive.classes.bounded_error import BoundedErrorGaussianClass
from persuasive.linear.bounded_error import BoundedErrorLinearClass

R1, R2, R0 = 1.0, 4.0, 0.1
A = [[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]]  # two statistics of three records; nobody exposed


def _fresh(code: str, *args: str) -> object:
    """Run ``code`` in a fresh interpreter; it prints one JSON value on its last line."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


NAMES_AFTER_IMPORT = """
import json
import persuasive
from persuasive.certify import THEOREMS
print(json.dumps([t.name for t in THEOREMS]))
"""

NAMES_AFTER_EVERY_SUBMODULE = """
import importlib, json, pkgutil
import persuasive
mods = [m.name for m in pkgutil.walk_packages(persuasive.__path__, "persuasive.")]
for m in sorted(mods, reverse=True):  # an order other than the package's own
    if not m.endswith("__main__"):
        importlib.import_module(m)
from persuasive.certify import THEOREMS
print(json.dumps([len(mods), [t.name for t in THEOREMS]]))
"""

NAMES_AFTER_THEOREM_MODULES = """
import json
import persuasive.certify.linear_bounded_error
import persuasive.certify.bounded_error
from persuasive.certify.registry import THEOREMS
print(json.dumps([t.name for t in THEOREMS]))
"""


def _closed_form(r1: float, r2: float, r0: float) -> float:
    c = 1.0 - 1.0 / r2
    return min(
        r1 + math.log(r2),
        math.log(r2) + 2.0 * r0 * r2 * math.sqrt(c * r1),
        math.log(r2) + r0 * r0,
    )


def test_registry_is_the_same_list_whatever_is_imported():
    alone = _fresh(NAMES_AFTER_IMPORT)
    n_mods, every = _fresh(NAMES_AFTER_EVERY_SUBMODULE)  # type: ignore[misc]
    first = _fresh(NAMES_AFTER_THEOREM_MODULES)
    assert n_mods > 100  # the walk did import the package's modules
    assert alone == every == first == [t.name for t in THEOREMS]
    assert isinstance(alone, list)
    pos = {name: alone.index(name) for name in alone}
    assert len(pos) == len(alone)  # no theorem twice
    # a subclass's theorem before the theorem of the class it refines
    for refined in ("prop7", "noisy_mean", "noisy_mean_laplace"):
        assert pos["bounded_error"] < pos[refined]
    assert pos["linear_bounded_error"] < pos["linear"]
    assert pos["tight"] < pos["prop3"]
    assert pos["noisy_mean_laplace"] < pos["prop5"]


CERTIFY_IN_FRESH_PROCESS = """
import base64, json, pickle, sys
import persuasive as pp
from persuasive.certify import find_theorem
# classes made in another process and unpickled here: unpickling runs no __post_init__, so
# nothing but `import persuasive` and pp.certify can have registered the theorems
mean_cls, lin_cls = pickle.loads(base64.b64decode(sys.argv[1]))
A = json.loads(sys.argv[2])
out = []
for mech, cls in (
    (pp.ExactMean(), mean_cls),
    (pp.Chain(pp.ExactMean(), pp.GaussianMechanism(8.0)), mean_cls),
    (pp.LinearStatistic(A), lin_cls),
):
    d = pp.PersuasivePrivacy(pp.MarginalDSS(), cls, 1.0, 0.05)
    c = pp.certify(mech, d)
    out.append([find_theorem(mech, d).name, c.basis, c.kappa])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def classes():
    mean_cls = BoundedErrorGaussianClass(R1, R2, max_mean_sd=1.0, max_person_error=R0)
    lin_cls = BoundedErrorLinearClass(R1, R2, max_stat_sd=1.0, max_person_error=R0)
    return mean_cls, lin_cls


def test_certify_uses_the_bounded_theorems_in_a_fresh_process(classes):
    from persuasive.certify.bounded_error import BoundedError
    from persuasive.certify.linear_bounded_error import LinearBoundedError

    blob = base64.b64encode(pickle.dumps(classes)).decode()
    got = _fresh(CERTIFY_IN_FRESH_PROCESS, blob, json.dumps(A))
    assert isinstance(got, list)
    (n1, b1, k_mean), (n2, b2, k_noisy), (n3, b3, k_lin) = got
    assert (n1, b1) == (n2, b2) == (BoundedError.name, BoundedError.basis)
    assert (n3, b3) == (LinearBoundedError.name, LinearBoundedError.basis)
    # the exact release: the closed form, rounded up by at most a few ulps
    sharp = _closed_form(R1, R2, R0)  # log 4 + 0.01 = 1.3963, Prop 7 gives 2.3863
    for k in (k_mean, k_lin):
        assert sharp <= k <= sharp * (1.0 + 1e-12)
    assert k_mean < R1 + math.log(R2) - 0.9  # not Prop 7's (nor the plain linear) value
    # and the same numbers as in this process, where everything has been imported
    mean_cls, lin_cls = classes
    here = [
        pp.certify(m, pp.PersuasivePrivacy(pp.MarginalDSS(), c, 1.0, 0.05)).kappa
        for m, c in (
            (pp.ExactMean(), mean_cls),
            (pp.Chain(pp.ExactMean(), pp.GaussianMechanism(8.0)), mean_cls),
            (pp.LinearStatistic(A), lin_cls),
        )
    ]
    assert here == [k_mean, k_noisy, k_lin]
