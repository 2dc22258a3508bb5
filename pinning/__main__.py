"""``python -m pinning``: the same command line as ``pin``."""

from pinning.cli import main

if __name__ == "__main__":
    main(prog_name="pin")
