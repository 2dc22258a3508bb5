"""pin on every node: fleet verification (:mod:`~pinning.fleet.batch`), the Slurm prolog,
health check and node features (:mod:`~pinning.fleet.slurm`), Node Feature Discovery
feature files (:mod:`~pinning.fleet.nfd`) and the Node Problem Detector plugin output
(:mod:`~pinning.fleet.npd`). pin plugs into the cluster's own engines; it never schedules.
"""
