"""One parser per tool output format (amd-smi, rocm-smi, rocminfo, nvidia-smi, env dumps).

Parsers are pure: text in, a model out. They tolerate missing fields and raise
:class:`pinning.errors.FormatError` only when the text has none of the expected shape.
"""
