"""Cost: prices, cost per million tokens (the article's R x 1e6 / (3600 x Q)), the ratio
rule, payback and the port-or-stay verdict, computed from acceptance results and a
porting audit (``pin cost``). The wire models are in :mod:`pinning.cost.model`.
"""
