"""The project file: ``pin.toml`` (or ``[tool.pin]`` in ``pyproject.toml``) that describes a
migration trial once: the project (name, model, framework requests, where its Python
environment comes from), named targets (the constraints ``pin resolve`` takes and image
settings), acceptance, cost inputs and where recorded results live.

``model`` is the pydantic model, ``load`` finds and reads the file (discovery, unknown keys
with "did you mean", key -> line), ``write`` renders the commented file ``pin init`` writes.
"""
