"""Verify the model a lock pins: its revision in the host's Hugging Face cache, then its files
one by one and the content hash over them.
"""

from __future__ import annotations

from pinning.lockfile.models import ModelFile, model_content_hash
from pinning.probe.models import ModelFacts, ModelFileProblem
from pinning.verify.compare import Comparer


class ModelGroup(Comparer):
    """The ``model.*`` fact group; each method adds its findings."""

    def model(self) -> None:
        """The locked model: its revision in the host's Hugging Face cache, then its files,
        one by one (``model.files[<path>]``: match, missing, extra, changed with both sizes
        and sha256 prefixes, a cache blob whose bytes do not match its name), and the
        content hash over them. A lock that does not pin the files (``files-unknown``) gets
        the revision check and a note saying how to pin them (``pin lock model``).
        """
        model = self.lock.model
        if model is None:
            return
        cached = self.facts.model
        if model.id is not None:
            self._model_revision(model.id, model.revision)
        if not model.files:
            why = model.files_unknown or "no file recorded"
            self.add("model-files-unknown", "model.files", "not-locked",
                     f"The lock does not pin {model.label}'s files ({why.rstrip('.')}); "
                     "run `pin lock model LOCK` where the model is downloaded to pin every "
                     "file, so pin verify can compare them.")
            return
        if cached is None or cached.source is None or (cached.id, cached.path) != (
                model.id, model.path):
            self.add("not-probed", "model.files", "not-probed",
                     f"The host's files of {model.label} were not read; run `pin verify` "
                     "live or on a --root tree (a --host snapshot needs `pin probe --lock "
                     "LOCK`).", expected=model.content_hash)
            return
        if not cached.files and not cached.problems:
            self.add("model-files-missing", "model.files", "missing",
                     f"None of the {len(model.files)} locked files of {model.label} are on "
                     f"the host: {(cached.reason or 'not there').rstrip('.')}.",
                     expected=model.content_hash)
            return
        self._model_files(model.files, model.missing, cached)

    def _model_revision(self, model_id: str, revision: str | None) -> None:
        """The locked revision among the revisions cached on the host."""
        cached = self.facts.model
        if cached is None or cached.id != model_id:
            self.add("not-probed", "model.revision", "not-probed",
                     f"The Hugging Face cache was not probed for {model_id}; run `pin probe "
                     "--lock LOCK` or `pin verify` live.", expected=revision)
        elif revision in cached.revisions:
            self.add("model", "model.revision", "match",
                     f"{model_id} revision {revision} is in the cache.",
                     expected=revision, actual=revision)
        elif not cached.revisions:
            self.add("model-missing", "model.revision", "missing",
                     f"{model_id}: {(cached.reason or 'not cached').rstrip('.')}.",
                     expected=revision)
        else:
            self.add("model-mismatch", "model.revision", "mismatch",
                     f"{model_id} is cached at {', '.join(cached.revisions)}, the lock has "
                     f"{revision}.", expected=revision, actual=", ".join(cached.revisions))

    def _model_files(self, locked: list[ModelFile], gone: list[str], cached: ModelFacts
                     ) -> None:
        """Each locked file against the host's, then the host's files the lock lacks, then
        the content hash.
        """
        have = {f.path: f for f in cached.files}
        problems = {p.path: p for p in cached.problems}
        where = cached.location or cached.label
        errors = sum(not self._model_file(want, have.get(want.path), problems.get(want.path),
                                          where) for want in locked)
        names = {f.path for f in locked}
        still_gone = {p for p, pr in problems.items()
                      if p in gone and pr.kind in ("missing", "incomplete")}
        partial = {p for p, pr in problems.items() if p not in names and _cache_level(pr)}
        for path in sorted(partial):
            self.add("model-download-incomplete", "model.files", "not-probed",
                     f"{path} in the cache: {problems[path].detail}.", actual=path,
                     source=cached.cache)
        for path in sorted({*have, *problems} - names - still_gone - partial):
            errors += 1
            got = have.get(path)
            if unrecordable_name(path):
                was = ("; a lock cannot record this name (a control character, a backslash "
                       "or not UTF-8): rename the file, then run `pin lock model LOCK`")
            elif path in gone:
                was = " (the lock recorded it as missing: run `pin lock model LOCK`)"
            else:
                was = ""
            self.add("model-file-extra", f"model.files[{path}]", "mismatch",
                     f"{path} is in {where} but not in the lock{was}.",
                     actual=_file_text(got) if got else problems[path].kind, source=where)
        expected = model_content_hash(locked)
        actual = cached.content_hash
        if actual == expected:
            self.add("model-content", "model.content-hash", "match",
                     f"{len(locked)} files of {cached.label} match the lock.",
                     expected=expected, actual=actual)
        else:
            count = f"{errors} file(s) differ" if errors else "the file lists differ"
            self.add("model-content-changed", "model.content-hash", "mismatch",
                     f"The model's content hash on the host differs from the lock's "
                     f"({count}).", expected=expected, actual=actual)

    def _model_file(self, want: ModelFile, got: ModelFile | None,
                    problem: ModelFileProblem | None, where: str) -> bool:
        """One locked file ``want`` against the host's (``got``, or the ``problem`` reading
        it) in ``where``; true when it matches.
        """
        fact = f"model.files[{want.path}]"
        exp = _file_text(want)
        if problem is not None and problem.kind == "blob-mismatch":
            self.add("model-blob-mismatch", fact, "mismatch",
                     f"{want.path}: the cache blob's bytes do not match its name "
                     f"({problem.detail.rstrip('.')}); the download is corrupt or was "
                     "changed in place. Delete the blob and download the revision again.",
                     expected=exp, source=where)
        elif problem is not None and problem.kind == "unreadable":
            self.add("model-file-unreadable", fact, "missing",
                     f"{want.path} is locked but its bytes cannot be read on the host "
                     f"({problem.detail.rstrip('.')}).", expected=exp, source=where)
        elif problem is not None:
            self.add("model-file-missing", fact, "missing",
                     f"{want.path} is locked but its bytes are not on the host "
                     f"({problem.kind}: {problem.detail.rstrip('.')}).", expected=exp,
                     source=where)
        elif got is None:
            self.add("model-file-missing", fact, "missing",
                     f"{want.path} is locked but not in {where}.", expected=exp, source=where)
        elif (got.size, got.sha256) != (want.size, want.sha256):
            self.add("model-file-changed", fact, "mismatch",
                     f"{want.path} changed: {_file_text(got)} on the host, the lock has "
                     f"{exp}.", expected=exp, actual=_file_text(got), source=where)
        else:
            self.add("model-file", fact, "match", f"{want.path} ({exp}).",
                     expected=exp, actual=exp)
            return True
        return False


def unrecordable_name(path: str) -> bool:
    """True when ``path`` (a file's path as a model reader reported it) is not a name a lock
    can record (:class:`~pinning.lockfile.models.ModelFile`: a control character, a
    backslash, an empty, ``.`` or ``..`` part, or not UTF-8); the reader then shows it
    escaped (``ascii()``), which holds a backslash.
    """
    from pydantic import TypeAdapter, ValidationError

    from pinning.lockfile.models import ModelFilePath

    try:
        path.encode()
        TypeAdapter(ModelFilePath).validate_python(path)
    except (UnicodeEncodeError, ValidationError):
        return True
    return False


def _cache_level(problem: ModelFileProblem) -> bool:
    """True for a download in progress in the cache's ``blobs/`` (not a file of the model)."""
    return problem.kind == "incomplete" and problem.path.startswith("blobs/") \
        and problem.path.endswith(".incomplete")


def _file_text(f: ModelFile) -> str:
    """``<size> bytes, sha256 <first 12 hex>`` for messages."""
    return f"{f.size} bytes, sha256 {f.sha256[:12]}"
