"""Importers that turn vendor-published files into matrix rows."""
