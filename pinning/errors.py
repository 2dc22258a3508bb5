"""The one error tree of pin.

Every fatal condition is a :class:`PinError` subclass carrying a distinct ``exit_code``
and a ``hint`` that tells the user what to do next. Only ``pinning.cli`` turns them into
an exit status and a printed paragraph; library code raises and never exits.
"""

from __future__ import annotations


class PinError(Exception):
    """Base of every error pin reports to a user.

    ``message`` says what went wrong and where (file, line or field); ``hint`` says what
    to do. ``exit_code`` is unique per subclass (see DESIGN.md, "Errors and exit codes").
    """

    exit_code: int = 1
    #: A few words for the exit-code list of ``pin --help`` (:func:`exit_codes`).
    summary: str = "error"
    default_hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def render(self) -> str:
        """Return the one-paragraph text the CLI prints: the message, then the hint."""
        text = self.message.rstrip()
        if self.hint:
            text = f"{text}\n{self.hint.rstrip()}"
        return text


class InternalError(PinError):
    """A bug in pin itself (exit 1)."""

    exit_code = 1
    summary = "bug (report it)"
    default_hint = "This is a bug in pin: re-run with --debug and report the traceback."


class UsageError(PinError):
    """A bad flag or a malformed specifier on the command line (exit 2)."""

    exit_code = 2
    summary = "usage"
    default_hint = "See `pin COMMAND --help` for the accepted forms."


class MatrixError(PinError):
    """A matrix or other data file is invalid (exit 3)."""

    exit_code = 3
    summary = "matrix or data file invalid"
    default_hint = "Fix the named file and field, or remove the overlay (--matrix / PIN_MATRIX)."


class NoValidatedCombination(PinError):
    """No validated combination satisfies the constraints (exit 4)."""

    exit_code = 4
    summary = "no validated combination"
    default_hint = (
        "Relax a constraint (see the alternatives above), or add a row your team validated "
        "with a site overlay (--matrix FILE)."
    )


class LockfileError(PinError):
    """A lockfile is unreadable, invalid or of an unknown version (exit 5)."""

    exit_code = 5
    summary = "lockfile invalid"
    default_hint = ("Restore the file, or run `pin lock upgrade FILE` to re-resolve it and keep "
                    "its frozen host values.")


class DriftError(PinError):
    """Verification found drift between a host or image and its lock (exit 6)."""

    exit_code = 6
    summary = "drift"


class ProbeError(PinError):
    """The host probe failed as a whole (exit 7)."""

    exit_code = 7
    summary = "probe failed or snapshot unreadable"


class FormatError(ProbeError):
    """A tool output or pasted dump is not in the format its parser reads (exit 7).

    The message names the source (file or command) and the line; parsers raise it only when
    the text has none of the expected shape, and otherwise return what they could read.
    """

    default_hint = (
        "Pass the complete, unedited output of the tool, from its first line (`pin doctor "
        "--help` lists the formats read)."
    )


class BuildError(PinError):
    """A build or registry operation failed (exit 8)."""

    exit_code = 8
    summary = "build or registry"


class SignatureError(PinError):
    """A signature or attestation is invalid (exit 9)."""

    exit_code = 9
    summary = "signature"


class GuardRefused(PinError):
    """A guard refused a side effect or a forbidden combination (exit 10)."""

    exit_code = 10
    summary = "guard refused"


class AuditFailed(PinError):
    """``pin audit`` found something at or above ``--fail-on`` (exit 11). The bill has
    been printed (or written) in full before this is raised.
    """

    exit_code = 11
    summary = "audit at or above --fail-on"


class AcceptanceFailed(PinError):
    """An acceptance gate failed (exit 12): a measured value missed the tolerance or SLO
    the gates file sets. The result has been printed (or written) in full before this is
    raised.
    """

    exit_code = 12
    summary = "acceptance gate failed"
    default_hint = ("Read the table above: each failed check names the measured value and "
                    "its limit. Fix the stack, or change the limit in the gates file on "
                    "purpose.")


class ServiceError(PinError):
    """A remote pin service refused a request or could not be reached (exit 13): the
    message names the service URL and quotes the service's own error and hint, when it
    sent one (never the token).
    """

    exit_code = 13
    summary = "pin service refused or unreachable"
    default_hint = ("Check the service URL (pin serve prints it when it starts), that it is "
                    "running, and the token: $PIN_TOKEN, $PIN_TOKEN_FILE or --token-file, "
                    "created with `pin serve token create`.")


class NothingToJudge(PinError):
    """``pin doctor`` read the dumps but none of them gave any rule an input (exit 14).

    The dumps held no GPU, torch build, package, driver, ROCm release or environment
    variable, so no rule could pass or fail: saying "no problems found" would be a claim
    nothing supports.
    """

    exit_code = 14
    summary = "nothing to judge (doctor)"
    default_hint = (
        "Paste a dump that shows the GPUs, drivers or installed packages, such as "
        "`python -m torch.utils.collect_env`, `pip list`, `amd-smi static` or `nvidia-smi`."
    )


class MissingExtra(PinError):
    """The command needs an optional part of pin that is not installed (exit 15): the
    message names the part (an extra of the ``pin`` distribution) and the module missing.
    """

    exit_code = 15
    summary = "optional part not installed"


#: Which extra of the ``pin`` distribution brings each optional top-level module (see
#: ``[project.optional-dependencies]`` in pyproject.toml).
EXTRA_OF: dict[str, str] = {
    "docker": "image", "cryptography": "image", "uv": "image",
    "fastapi": "serve", "starlette": "serve", "uvicorn": "serve", "uvloop": "serve",
    "httptools": "serve", "sqlalchemy": "serve", "alembic": "serve", "psycopg": "serve",
    "prometheus_client": "serve",
    "matplotlib": "report", "jinja2": "report",
    "aiohttp": "accept", "tokenizers": "accept",
}


def missing_extra(exc: ModuleNotFoundError, command: str = "pin") -> MissingExtra | None:
    """The :class:`MissingExtra` for ``exc`` when the module it could not import comes
    with an extra of pin (:data:`EXTRA_OF`), naming ``command`` (``pin serve``); ``None``
    for any other module (a bug, or a broken install).
    """
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return MissingExtra(
        f"{command} needs pin's optional part '{extra}', which is not installed ({module} "
        "could not be imported).",
        hint=f"Install it where pin lives: pip install 'pin[{extra}]' (a tool install: "
             f"pipx install --force 'pin[{extra}]' or uv tool install 'pin[{extra}]'); "
             "'pin[all]' brings every part.")


ALL_ERRORS: tuple[type[PinError], ...] = (
    InternalError,
    UsageError,
    MatrixError,
    NoValidatedCombination,
    LockfileError,
    DriftError,
    ProbeError,
    BuildError,
    SignatureError,
    GuardRefused,
    AuditFailed,
    AcceptanceFailed,
    ServiceError,
    NothingToJudge,
    MissingExtra,
)


def exit_codes() -> list[tuple[int, str]]:
    """``(code, summary)`` for success (0) and every class of :data:`ALL_ERRORS`, by code:
    the list ``pin --help`` prints, generated here so it cannot miss a code.
    """
    return [(0, "ok"), *sorted((cls.exit_code, cls.summary) for cls in ALL_ERRORS)]
