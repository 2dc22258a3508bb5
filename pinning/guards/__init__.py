"""Guards: the one rule system. The environment view and findings (``view``), the coded
rules that need the matrix or several facts at once (``checks``), the data rules
(``rules.toml`` + ``models``), the engine that evaluates them, and the in-build guard script.
"""
