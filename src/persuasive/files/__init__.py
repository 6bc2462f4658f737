"""Files in and out of a release: exact reading of inputs and publications
(:mod:`persuasive.files.reading`), the atomic, guarded output folder
(:mod:`persuasive.files.output`) and the signals during a release
(:mod:`persuasive.files.signals`). Below every release kind and ``verify``."""
