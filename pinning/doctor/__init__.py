"""Doctor: pasted environment dumps -> one merged view -> the lock-free rules' findings."""
