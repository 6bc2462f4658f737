"""Files in and out of a release: exact reading of inputs and publications
(:mod:`persuasive.files.reading`) and the atomic, guarded output folder
(:mod:`persuasive.files.output`). Below every release kind and ``verify``."""
