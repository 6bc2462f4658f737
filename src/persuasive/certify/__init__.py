"""Proof-based certificates: one module per theorem, asked in order by :func:`certify`.

=========================  ===================================================================
theorem                    covers
=========================  ===================================================================
Prop 4 (``Prop4``)         Joint(M, K): M's certificate, unchanged
tight (``tight``)          Composition / ComposedRelease under LogScore x NeighbourPriors:
                           exact at delta = 0, privacy-loss distribution (bracketed) above
Prop 3 (``Prop3``)         Composition(M1, M2) with a conjugate class: kappa1 + kappa2 (bound)
Prop 6 (``Prop6``)         LogScore x NeighbourPriors (PDP): noise, deterministic, finite kernels
App. C (``AppC``)          PPE with LogScore x NeighbourPriors: worst divergence [RECON]
bounded error              ExactMean or Chain(ExactMean, Gaussian/Laplace noise) x MarginalDSS x
(``BoundedError``)         BoundedErrorGaussianClass: min of Prop 7's bound and two bounds on
                           each person's error (library extension, docs/release_means.md (e))
Prop 7 (``Prop7``)         ExactMean x MarginalDSS x GaussianMeanClass: r1 + log r2
Prop 8 (``Prop8``)         CellSuppression x SmallCellLogScore x SmallCellClass: -log alpha
noisy mean (``NoisyMean``) Chain(ExactMean, GaussianMechanism) x MarginalDSS x
                           GaussianMeanClass: Prop 7 with noise (library extension, bound)
linear bounded error       A x (+ Gaussian noise) x MarginalDSS x BoundedErrorLinearClass
(``LinearBoundedError``)   (library extension, docs/linear_bounded.md; bound)
linear (``LinearStats``)   A x (+ Gaussian noise) x MarginalDSS x LinearGaussianClass
                           (library extension, docs/linear.md; bound)
noisy mean, Laplace        Chain(ExactMean, LaplaceMechanism) x MarginalDSS x GaussianMeanClass:
(``NoisyMeanLaplace``)     no finite kappa (library extension, docs/release_means.md (c'))
Prop 5 (``Prop5Chain``)    Chain(M, K) that is not a finite kernel: refused, with the reason
=========================  ===================================================================

The order is the registry's (:data:`THEOREMS`), fixed here, whatever was imported first: a
theorem for a subclass is asked before the theorem for the class it refines (bounded error
before Prop 7 and the noisy mean, linear bounded error before linear), tight composition before
Prop 3, the Laplace mean before Prop 5.
"""

from persuasive.certify.appc import AppC
from persuasive.certify.composition import Prop3, Prop4, Prop5Chain
from persuasive.certify.linear import LinearStats
from persuasive.certify.noisy_mean import NoisyMean
from persuasive.certify.prop6 import Prop6
from persuasive.certify.prop7 import Prop7
from persuasive.certify.prop8 import Prop8
from persuasive.certify.registry import THEOREMS, Theorem, certify, find_theorem, register

for _th in (
    Prop4(),
    Prop3(),
    Prop6(),
    AppC(),
    Prop7(),
    Prop8(),
    NoisyMean(),
    LinearStats(),
    Prop5Chain(),
):
    register(_th)
import persuasive.certify.noisy_mean_laplace  # noqa: E402, F401  (registers itself before Prop 5)
from persuasive.certify import tight as _tight  # noqa: E402, F401  (registers before Prop 3)

# the bounded-error theorems insert themselves before the theorems of the classes they refine
# (before Prop 7 / the noisy mean, and before linear): imported here so that the registry, hence
# every certificate, does not depend on what the caller imported first
from persuasive.certify.bounded_error import BoundedError  # noqa: E402
from persuasive.certify.linear_bounded_error import LinearBoundedError  # noqa: E402

__all__ = [
    "THEOREMS",
    "AppC",
    "BoundedError",
    "LinearBoundedError",
    "LinearStats",
    "NoisyMean",
    "Prop3",
    "Prop4",
    "Prop5Chain",
    "Prop6",
    "Prop7",
    "Prop8",
    "Theorem",
    "certify",
    "find_theorem",
    "register",
]
