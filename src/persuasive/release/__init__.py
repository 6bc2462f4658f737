"""Releases on real data: count tables with cell suppression (Prop 8) and means (Prop 7).

Each release returns the data to publish together with a certificate that does not depend on the
data (Assumption 1, Bon et al. 2026); :mod:`persuasive.report` writes the certificate as JSON,
re-checks it (``verify``) and renders the custodian's report.
"""

from persuasive.classes.receivers import (
    NegativeBinomialReceiver,
    PoissonReceiver,
    Receiver,
    SmallCellReceiver,
    receiver_from_dict,
)
from persuasive.release.calibrate import calibrate_threshold
from persuasive.release.linked import LinkedRelease, release_linked_tables
from persuasive.release.means import (
    GroupMeansRelease,
    MeanRelease,
    calibrate_mean,
    release_group_means,
    release_mean,
)
from persuasive.release.tables import TableRelease, release_table

__all__ = [
    "GroupMeansRelease",
    "LinkedRelease",
    "MeanRelease",
    "NegativeBinomialReceiver",
    "PoissonReceiver",
    "Receiver",
    "SmallCellReceiver",
    "TableRelease",
    "calibrate_mean",
    "calibrate_threshold",
    "receiver_from_dict",
    "release_group_means",
    "release_linked_tables",
    "release_mean",
    "release_table",
]
