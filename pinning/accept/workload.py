"""The serving gate's requests: the prompts of ``[serve.workload]``, from a file or random.

Two sources, as :func:`build_prompts` chooses:

* ``prompts = "FILE"``: JSON lines, one object per non-blank line with a ``"prompt"``
  string and optionally ``"max_tokens"`` (a whole number >= 1; the workload's
  ``output-tokens`` otherwise). Other keys are ignored, so a greedy-reference file
  (``{"prompt", "max_tokens", "text", "usage", ...}``) is a prompt file too.
* otherwise random prompts of ``input-tokens`` tokens each from ``seed``, built with a
  tokenizer in the manner of vLLM's random dataset (vllm-project/vllm@
  f2e97ddaf5902a9727f48b70d001b6117b8b8b12:vllm/benchmarks/datasets.py, ``RandomDataset``
  and ``gen_prompt_decode_to_target_len``; date not recorded): the special tokens
  the tokenizer adds (``[CLS]``/``[SEP]``, a BOS) are subtracted from the target; for
  request ``i`` a seeded offset picks ``(offset + i + j) % n`` (``j`` < target) from the
  ``n`` non-special token ids; the ids are decoded, the text re-encoded (no special tokens)
  and the ids truncated when too long or extended with seeded random non-special ids when
  too short, at most 10 times (vLLM's ``max_retry``). What differs from vLLM: the RNG is
  Python's ``random.Random(seed)`` (vLLM uses ``numpy.random.default_rng``, which pin does
  not depend on), so the prompts are not vLLM's byte for byte; and each prompt's
  ``input_tokens`` is the final text's count *with* the special tokens added, which is what
  the server counts for ``/v1/completions`` (a chat template adds more tokens pin cannot
  know).

Paths (``prompts``, ``tokenizer``) that are relative resolve against the gates file's
folder. Bad input raises ``UsageError`` (exit 2) naming the file, the line and the key.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinning.accept.config import ServeWorkload
from pinning.errors import UsageError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["MAX_RETRY", "Prompt", "TextTokenizer", "build_prompts", "load_tokenizer",
           "random_prompts", "read_prompt_file"]

#: Decode/re-encode rounds before a random prompt's length is taken as it is (vLLM's
#: ``max_retry`` default in ``gen_prompt_decode_to_target_len``, datasets.py above).
MAX_RETRY = 10
_MAX_PROMPT_FILE = 256 * 1024 * 1024
_PROMPTS_HINT = ('Write one JSON object per line: {"prompt": "text", "max_tokens": 32} '
                 '("max_tokens" optional), or drop `prompts` for random prompts.')
_TOKENIZER_HINT = ("Set [serve.workload] tokenizer to the model's tokenizer.json (or the "
                   "folder holding it, as a Hugging Face snapshot has it); a relative path "
                   "is read from the gates file's folder.")


@dataclass(frozen=True)
class Prompt:
    """One request's input: ``text`` (the prompt, or the user message for chat),
    ``input_tokens`` (its token count when a tokenizer counted it, else ``None``) and
    ``max_tokens`` (the completion length asked for, >= 1).
    """

    text: str
    input_tokens: int | None
    max_tokens: int


def _resolve(spec: str, base: Path) -> Path:
    """``spec`` as a path, relative ones under ``base`` (``~`` expanded)."""
    path = Path(spec).expanduser()
    return path if path.is_absolute() else Path(base) / path


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` (:attr:`tokenizer`) with truncation and padding switched
    off, so every count is of the whole text; :attr:`path` is the file it came from.
    """

    def __init__(self, tokenizer: Tokenizer, path: Path) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.path = path

    def count(self, text: str) -> int:
        """The tokens of ``text`` with no special tokens added (how output text is counted
        when the server reports no ``usage``); 0 for ``""``.
        """
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count_input(self, text: str) -> int:
        """The tokens of ``text`` as a prompt: special tokens (``[CLS]``, a BOS) included."""
        return len(self.tokenizer.encode(text, add_special_tokens=True).ids)

    def tokens(self, text: str) -> list[str]:
        """The token strings of ``text``, no special tokens added."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).tokens) if text else []

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text``, no special tokens added."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        """The text of ``ids`` (special tokens skipped)."""
        return str(self.tokenizer.decode(ids))


def load_tokenizer(spec: str, base: Path) -> TextTokenizer:
    """The tokenizer at ``spec``: a ``tokenizer.json`` file or a folder holding one; a
    relative ``spec`` resolves against ``base`` (the gates file's folder).

    Raises ``UsageError`` (exit 2) naming the path when it is absent or not a tokenizer.
    """
    from tokenizers import Tokenizer

    path = _resolve(spec, base)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise UsageError(f"[serve.workload] tokenizer {spec!r}: {path} is not a file.",
                         hint=_TOKENIZER_HINT)
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises plain Exception on bad JSON
        raise UsageError(f"[serve.workload] tokenizer {spec!r}: {path} is not a tokenizer "
                         f"file the `tokenizers` library reads ({str(exc)[:200]}).",
                         hint=_TOKENIZER_HINT) from exc
    return TextTokenizer(tok, path)


def _special_count(tokenizer: Tokenizer) -> int:
    """How many special tokens the tokenizer adds to one sequence (0 without a
    post-processor).
    """
    post = tokenizer.post_processor
    return int(post.num_special_tokens_to_add(False)) if post is not None else 0


def _allowed_ids(tokenizer: Tokenizer) -> list[int]:
    """Every token id that is not a special token, ascending."""
    special = {i for i, tok in tokenizer.get_added_tokens_decoder().items() if tok.special}
    return [i for i in range(tokenizer.get_vocab_size(with_added_tokens=True))
            if i not in special]


def random_prompts(tok: TextTokenizer, count: int, input_tokens: int, output_tokens: int,
                   seed: int) -> list[Prompt]:
    """``count`` random prompts of ``input_tokens`` tokens each (special tokens included,
    as the module docstring says), asking ``output_tokens`` each; the same arguments give
    the same prompts. ``input_tokens`` of each :class:`Prompt` is its measured count,
    which may differ from the target when 10 rounds could not make the text re-encode to
    exactly that length (rare; vLLM accepts the same mismatch).

    Raises ``UsageError`` when the tokenizer has no non-special token or adds at least
    ``input_tokens`` special tokens itself.
    """
    tokenizer = tok.tokenizer
    specials = _special_count(tokenizer)
    target = input_tokens - specials
    if target < 1:
        raise UsageError(f"[serve.workload] input-tokens = {input_tokens} leaves no room for "
                         f"text: the tokenizer adds {specials} special tokens itself.",
                         hint="Raise input-tokens.")
    allowed = _allowed_ids(tokenizer)
    if not allowed:
        raise UsageError("[serve.workload] tokenizer: it has no non-special token to build "
                         "random prompts from.", hint=_TOKENIZER_HINT)
    rng = random.Random(seed)
    n = len(allowed)
    offsets = [rng.randrange(n) for _ in range(count)]
    out: list[Prompt] = []
    for i, offset in enumerate(offsets):
        ids = [allowed[(offset + i + j) % n] for j in range(target)]
        text = tokenizer.decode(ids)
        for _ in range(MAX_RETRY):
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            if len(ids) == target:
                break
            if len(ids) > target:
                ids = ids[:target]
            else:
                ids = ids + [allowed[rng.randrange(n)] for _ in range(target - len(ids))]
            text = tokenizer.decode(ids)
        measured = len(tokenizer.encode(text, add_special_tokens=True).ids)
        out.append(Prompt(text=text, input_tokens=measured, max_tokens=output_tokens))
    return out


def _prompt_line(doc: Any, label: str, default_max: int,
                 count: Callable[[str], int] | None) -> Prompt:
    """One parsed line of a prompt file as a :class:`Prompt`."""
    if not isinstance(doc, dict):
        raise UsageError(f"{label}: expected a JSON object, found {type(doc).__name__}.",
                         hint=_PROMPTS_HINT)
    text = doc.get("prompt")
    if not isinstance(text, str) or not text:
        raise UsageError(f'{label}: "prompt" must be a non-empty string.', hint=_PROMPTS_HINT)
    max_tokens = doc.get("max_tokens", default_max)
    if (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
            or not 1 <= max_tokens <= 10_000_000):
        raise UsageError(f'{label}: "max_tokens" must be a whole number from 1 to '
                         f"10000000, not {max_tokens!r:.40}.", hint=_PROMPTS_HINT)
    tokens = None
    if count is not None:
        tokens = count(text)
    return Prompt(text=text, input_tokens=tokens, max_tokens=max_tokens)


def read_prompt_file(path: Path, default_max_tokens: int,
                     tokenizer: TextTokenizer | None = None) -> list[Prompt]:
    """Every prompt of the JSON-lines file ``path`` (at most 256 MiB), in file order;
    ``max_tokens`` defaults to ``default_max_tokens``; with a ``tokenizer`` each prompt's
    ``input_tokens`` is counted (special tokens included).

    Raises ``UsageError`` naming the file and line for a line that is not JSON, not an
    object, without a non-empty ``"prompt"`` string or with a bad ``"max_tokens"``, and
    for an unreadable, non-UTF-8 or empty file.
    """
    from pinning.util.files import decode_utf8, json_lines, read_regular_bytes

    label = f"Prompt file {path}"
    raw = read_regular_bytes(Path(path), UsageError, label=label, hint=_PROMPTS_HINT,
                             limit=_MAX_PROMPT_FILE)
    text = decode_utf8(raw, UsageError, label=label, hint=_PROMPTS_HINT)
    count = tokenizer.count_input if tokenizer is not None else None
    out: list[Prompt] = []
    for n, doc in json_lines(text, UsageError, label=label, hint=_PROMPTS_HINT):
        out.append(_prompt_line(doc, f"{label} line {n}", default_max_tokens, count))
    if not out:
        raise UsageError(f"{label}: no prompt in it.", hint=_PROMPTS_HINT)
    return out


def build_prompts(workload: ServeWorkload, base: Path,
                  tokenizer: TextTokenizer | None = None) -> list[Prompt]:
    """The ``workload.requests`` prompts of a run, in order.

    With ``workload.prompts`` (relative to ``base``, the gates file's folder) the file's
    prompts in order, cycled when the file holds fewer than ``requests`` and cut when it
    holds more; otherwise :func:`random_prompts` from ``workload.seed``. ``tokenizer``
    (a loaded one, e.g. from :func:`load_tokenizer`) is used when given, else
    ``workload.tokenizer`` is loaded when set.

    Raises ``UsageError`` for a bad prompt file or tokenizer, and for random prompts with
    no tokenizer (it says to set ``[serve.workload] tokenizer``).
    """
    if tokenizer is None and workload.tokenizer is not None:
        tokenizer = load_tokenizer(workload.tokenizer, base)
    if workload.prompts is not None:
        found = read_prompt_file(_resolve(workload.prompts, base), workload.output_tokens,
                                 tokenizer)
        return [found[i % len(found)] for i in range(workload.requests)]
    if tokenizer is None:
        raise UsageError("[serve.workload]: random prompts of input-tokens = "
                         f"{workload.input_tokens} need a tokenizer to count tokens, and "
                         "none is set.",
                         hint=_TOKENIZER_HINT + " Or give `prompts` = a JSON-lines file.")
    return random_prompts(tokenizer, workload.requests, workload.input_tokens,
                          workload.output_tokens, workload.seed)
