"""Verify a host against its lock (compare, by fact group; the report) and freeze a trial
host's values into the lock.
"""
