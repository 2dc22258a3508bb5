"""The compatibility matrix: models, loading and validation of data files, queries and importers."""
