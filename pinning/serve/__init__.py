"""pin serve: the team's pinning service (HTTP API, storage, auth, dashboard, metrics).

Layer: below ``pinning.cli``, above ``pinning.cost``; it may import every stage below it.
"""
