"""Files in and out of a release: the shapes data may come in (:mod:`persuasive.files.sources`:
paths, :class:`DataFile`, polars, pandas and pyarrow tables), exact reading of inputs and
publications (:mod:`persuasive.files.reading`), the atomic, guarded output folder
(:mod:`persuasive.files.output`) and the signals during a release
(:mod:`persuasive.files.signals`). Below every release kind and ``verify``."""

from persuasive.files.sources import DataFile

__all__ = ["DataFile"]
