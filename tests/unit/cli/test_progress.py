"""The progress renderers of the CLI (pinning.cli.progress): plain lines off a terminal, none
with --quiet or --format json, rich bars on a terminal; all safe from several threads."""

from __future__ import annotations

import io
import threading

from pinning.cli.progress import LineProgress, RichProgress, human_bytes, progress_for
from pinning.util.progress import NULL_PROGRESS


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_human_bytes() -> None:
    assert [human_bytes(n) for n in (0, 950, 12_300_000, 1_200_000_000, 25e9)] == [
        "0 B", "950 B", "12.3 MB", "1.20 GB", "25.0 GB"]


def test_plain_lines_off_a_terminal_one_at_start_one_at_end() -> None:
    out = io.StringIO()
    with progress_for("text", stream=out) as progress:
        assert isinstance(progress, LineProgress)
        task = progress.task("push layer 1/2 sha256:1a2b", 2_000_000)
        task.advance(1_000_000)
        task.advance(1_000_000)
        task.done()
        task.done()  # a second call prints nothing
        skipped = progress.task("push layer 2/2 sha256:3c4d", 5_000)
        skipped.done("already in the registry")
    lines = out.getvalue().splitlines()
    assert lines[0] == "  push layer 1/2 sha256:1a2b (2.00 MB)..."
    assert lines[1].startswith("  push layer 1/2 sha256:1a2b: 2.00 MB")
    assert lines[2:] == ["  push layer 2/2 sha256:3c4d (5.00 kB)...",
                         "  push layer 2/2 sha256:3c4d: already in the registry"]


def test_control_characters_in_a_label_are_escaped() -> None:
    out = io.StringIO()
    with progress_for("text", stream=out) as progress:
        progress.task("pull \x1b[31mred", None).done()
    assert "\x1b" not in out.getvalue()


def test_quiet_and_json_show_nothing() -> None:
    for fmt, quiet in (("text", True), ("json", False)):
        out = _Tty()
        with progress_for(fmt, quiet=quiet, stream=out) as progress:
            assert progress is NULL_PROGRESS
            progress.task("x", 10).done()
        assert out.getvalue() == ""


def test_bars_on_a_terminal_from_several_threads() -> None:
    out = _Tty()
    with progress_for("text", stream=out) as progress:
        assert isinstance(progress, RichProgress)

        def work(i: int) -> None:
            task = progress.task(f"compress layer {i}", 1000)
            for _ in range(10):
                task.advance(100)
            task.done()

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        progress.task("push config", 10).done("mounted from pin/base")
    text = out.getvalue()
    assert all(f"compress layer {i}" in text for i in range(4))
    assert "mounted from pin/base" in text


def test_a_step_that_fails_says_stopped_not_done() -> None:
    """A task ended from a ``finally`` while its step raises prints no "done" line just
    before the error; one that ends cleanly still does.
    """
    out = io.StringIO()
    with progress_for("text", stream=out) as progress:
        task = progress.task("resolve 3 requirement(s) with uv")
        try:
            try:
                raise RuntimeError("uv failed")
            finally:
                task.done()
        except RuntimeError:
            pass
        clean = progress.task("fetch 2 wheel(s)")
        clean.done()
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("  resolve 3 requirement(s) with uv: stopped (")
    assert "done" not in lines[1]
    assert lines[3].startswith("  fetch 2 wheel(s): done (")
