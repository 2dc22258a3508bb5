"""Resolve: user constraints + the matrix -> a :class:`~pinning.resolve.result.Resolution`,
and a resolution -> a sealed lockfile (``to_lock``), with the resolve-phase guards applied.
"""
