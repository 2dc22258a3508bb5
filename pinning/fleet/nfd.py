"""Node Feature Discovery (NFD) local feature file for ``pin verify --emit nfd``.

NFD's ``local`` feature source reads every file in
``/etc/kubernetes/node-feature-discovery/features.d/`` except dot-files; each line is
``<namespace>/<name>[=<value>]`` (value ``true`` when omitted), ``#`` starts a comment, and
the directives ``# +expiry-time=<RFC3339>``, ``# +no-label`` and ``# +no-feature`` change
how the following line(s) are read; a file over 64 kB is ignored; writers should write a
dot-file in the same folder and rename it. Sources, all read 2026-12-01:

- kubernetes-sigs/node-feature-discovery@03ae1ac2eaba2fd4cab4cf925707ed262abc3f8d:
  docs/usage/customization-guide.md, "Local feature source";
- the parser, kubernetes-sigs/node-feature-discovery@a650db05eccd1755417188498717f1e3f696cfb0:
  source/local/local.go;
- nfd-master's label check (``Label``),
  kubernetes-sigs/node-feature-discovery@e7ae507f0b3bbb76b869383ac079c0ca8136772f:
  pkg/apis/nfd/validate/validate.go;
- kubernetes/kubernetes@03014f486c86dbe8a7fbe275fe14250854aab219:
  staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go (the published
  kubernetes/apimachinery module's ``pkg/util/validation``).

A feature line becomes a node label only if nfd-master accepts it: the key must pass
apimachinery's ``IsQualifiedName``, the namespace must be non-empty and not ``kubernetes.io``
or a ``*.kubernetes.io`` one (except NFD's own ``feature.node`` / ``profile.node`` ones), and
the value must pass ``IsValidLabelValue``. The NFD releases that read these files as pin
writes them are in deploy/kubernetes/README.md ("NFD version").

pin's labels live in :data:`NAMESPACE`. The 64-hex lock digest does not fit a label value
(at most 63 characters), so the label carries its first 12 hex digits (the same short form as
the Slurm feature ``pin_<digest12>``) and the whole digest is written as a ``# +no-label``
feature: NFD then keeps it as an element of the ``local.feature`` attribute feature of the
node (in the node's NodeFeature object), where a NodeFeatureRule can match it exactly, but it
makes no label and no annotation by itself.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.verify.report import VerifyReport

__all__ = ["DEFAULT_TTL_S", "MAX_FILE_BYTES", "NAMESPACE", "Feature", "check_feature_file",
           "digest12", "features", "is_label_value", "label_problems", "render_feature_file",
           "write_feature_file"]

#: pin's label namespace (a domain pin already names its attestation types under, never
#: ``kubernetes.io``, which NFD refuses).
NAMESPACE = "pin.dev"

#: Seconds a written file stays valid by default (``# +expiry-time`` = now + this): three
#: runs of the DaemonSet in ``deploy/kubernetes`` (every 300 s), so one slow run does not
#: drop the labels but a stopped pin does.
DEFAULT_TTL_S = 900

#: NFD ignores a feature file larger than this many bytes (``MaxFeatureFileSize`` in
#: ``source/local/local.go``; "The feature file size limit it 64kB").
MAX_FILE_BYTES = 65536

#: The directives NFD's parser knows; any other ``# +word`` is logged as an error by NFD.
DIRECTIVES = frozenset({"expiry-time", "no-label", "no-feature"})

Result = Literal["match", "drift", "unknown"]

_LABEL_MAX = 63     # IsValidLabelValue / the name part of IsQualifiedName
_SUBDOMAIN_MAX = 253
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _ALNUM | frozenset("-_.")
_DNS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_DNS_ENDS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# nfdv1alpha1.FeatureLabelNs / ProfileLabelNs and their sub-namespace suffixes.
_NFD_OWN = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")
# Go's time.RFC3339 as time.Parse accepts it (fractional seconds allowed when parsing).
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
                      r"(?:Z|[+-][0-9]{2}:[0-9]{2})")
_HEX64 = re.compile(r"sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class Feature:
    """One line of the file: ``name`` (``<namespace>/<name>``), ``value``, and ``label``
    (False: written after ``# +no-label``, a feature for NodeFeatureRules only).
    """

    name: str
    value: str
    label: bool = True


def _name_part(name: str, what: str) -> list[str]:
    """Problems of ``name`` as the name part of a qualified name (or a label value, which
    may also be empty): ``[A-Za-z0-9]``, then ``[-A-Za-z0-9_.]``, ending alphanumeric, at
    most 63 characters.
    """
    problems = []
    if len(name) > _LABEL_MAX:
        problems.append(f"{what} is {len(name)} characters, more than {_LABEL_MAX}")
    if name and not (set(name) <= _NAME_CHARS and name[0] in _ALNUM and name[-1] in _ALNUM):
        problems.append(f"{what} {name!r} must be [A-Za-z0-9._-] and start and end "
                        "alphanumeric")
    return problems


def _subdomain(prefix: str) -> list[str]:
    """Problems of ``prefix`` as a DNS-1123 subdomain (``IsDNS1123Subdomain``)."""
    if len(prefix) > _SUBDOMAIN_MAX:
        return [f"namespace is longer than {_SUBDOMAIN_MAX} characters"]
    for part in prefix.split("."):
        if not (part and set(part) <= _DNS_CHARS and part[0] in _DNS_ENDS
                and part[-1] in _DNS_ENDS):
            return [f"namespace {prefix!r} is not a DNS subdomain (lower-case letters, digits, "
                    "'-' and '.', each part starting and ending alphanumeric)"]
    return []


def is_label_value(value: str) -> bool:
    """True when ``value`` passes apimachinery's ``IsValidLabelValue``: empty, or at most
    63 characters of ``[A-Za-z0-9._-]`` starting and ending alphanumeric.
    """
    return not _name_part(value, "value")


def label_problems(key: str, value: str) -> list[str]:
    """Why nfd-master would refuse ``key=value`` as a node label (NFD's ``validate.Label``):
    empty when it is accepted. ``key`` must be ``<namespace>/<name>`` (``IsQualifiedName``;
    NFD auto-prefixes unprefixed names today but its guide says they should not be used),
    the namespace not ``kubernetes.io`` nor under it (NFD's own namespaces excepted).
    """
    parts = key.split("/")
    if len(parts) > 2:
        return [f"key {key!r} has more than one '/'"]
    if len(parts) == 1:
        problems = ["key has no namespace (<namespace>/<name>); NFD's guide says unprefixed "
                    "label names should not be used"]
        name = key
    else:
        prefix, name = parts
        problems = _subdomain(prefix) if prefix else ["namespace is empty"]
        if (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")) and not any(
                prefix == own or prefix.endswith("." + own) for own in _NFD_OWN):
            problems.append(f"namespace {prefix!r} is denied by NFD (kubernetes.io)")
    if not name:
        problems.append("name part is empty")
    problems += _name_part(name, "name part")
    return problems + _name_part(value, "value")


def digest12(lock_hash: str) -> str:
    """The first 12 hex digits of a ``sha256:<64 hex>`` lock hash (the short form pin uses
    in labels and Slurm features). ``ValueError`` for another shape.
    """
    hit = _HEX64.fullmatch(lock_hash)
    if hit is None:
        raise ValueError(f"not a sha256 digest: {lock_hash!r}")
    return hit.group(1)[:12]


def _lock_labels(lock: Lockfile) -> list[Feature]:
    """What the lock asked for, as labels when the values fit: ``lock.gpu``,
    ``lock.gfx-target``, ``lock.runtime`` (``rocm-7.1.1``); a value that does not fit a
    label is left out, never cut.
    """
    wanted = [("lock.gpu", lock.request.gpu),
              ("lock.gfx-target", lock.target.gfx_target.value if lock.target.gfx_target
               else None),
              ("lock.runtime", f"{lock.runtime.name}-{lock.runtime.version.value}"
               if lock.runtime.version.value else None)]
    return [Feature(f"{NAMESPACE}/{name}", value) for name, value in wanted
            if value and is_label_value(value)]


def features(report: VerifyReport | None, lock: Lockfile | None) -> list[Feature]:
    """The features pin writes, in file order: ``result`` (``match``, ``drift``, or
    ``unknown`` when there is no report: the lock or the host could not be read),
    ``drift-count`` (with a report), ``lock`` (12 hex digits) and the lock's gpu /
    gfx-target / runtime labels (with a lock), then the whole digest ``lock-sha256`` as a
    no-label feature. Pure.
    """
    result: Result = report.result if report is not None else "unknown"
    out = [Feature(f"{NAMESPACE}/result", result)]
    if report is not None:
        out.append(Feature(f"{NAMESPACE}/drift-count", str(len(report.drift))))
    lock_hash = report.lock_hash if report is not None else (
        lock.content_hash if lock is not None else None)
    if lock_hash is not None:
        out.append(Feature(f"{NAMESPACE}/lock", digest12(lock_hash)))
    if lock is not None:
        out += _lock_labels(lock)
    if lock_hash is not None:
        out.append(Feature(f"{NAMESPACE}/lock-sha256", lock_hash.removeprefix("sha256:"),
                           label=False))
    return out


def _rfc3339(moment: dt.datetime) -> str:
    """``moment`` (timezone-aware) in UTC as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if moment.tzinfo is None:
        raise ValueError("the clock must give a timezone-aware time")
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_feature_file(report: VerifyReport | None, lock: Lockfile | None, *,
                        now: dt.datetime, ttl_s: int = DEFAULT_TTL_S) -> str:
    """The feature file's text: a comment, ``# +expiry-time=`` (``now`` + ``ttl_s``
    seconds, so every line after it expires when pin stops refreshing the file), then
    :func:`features`. ``now`` must be timezone-aware; pure (the caller passes the clock).
    ``ValueError`` for ``ttl_s`` < 1; the text always passes :func:`check_feature_file`.
    """
    if ttl_s < 1:
        raise ValueError(f"ttl_s must be at least 1 second, not {ttl_s}")
    lines = ["# Written by pin verify --emit nfd; replaced on every run, do not edit.",
             f"# +expiry-time={_rfc3339(now + dt.timedelta(seconds=ttl_s))}"]
    for feat in features(report, lock):
        if not feat.label:
            lines.append("# +no-label")
        lines.append(f"{feat.name}={feat.value}")
    return "\n".join(lines) + "\n"


def _expiry(value: str) -> dt.datetime | None:
    """The time of an ``expiry-time`` value as Go's ``time.Parse(time.RFC3339, ...)``
    reads it, ``None`` when it would fail.
    """
    text = value.strip()
    if _RFC3339.fullmatch(text) is None:
        return None
    head, dot, rest = text.partition(".")
    if dot:  # Go reads up to nanoseconds, Python up to microseconds: keep 6 digits
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def check_feature_file(text: str | bytes, *, now: dt.datetime | None = None) -> list[str]:
    """Every way ``text`` breaks NFD's rules, one string each (``line N: ...``); empty when
    NFD reads every line and nfd-master accepts every label.

    Checked: size at most :data:`MAX_FILE_BYTES` bytes (UTF-8); directives (``# +...``) are
    known and an ``expiry-time`` value parses as RFC 3339; each line that becomes a label
    passes :func:`label_problems`; a ``# +no-label`` line has a non-empty name. With ``now``
    (timezone-aware), an expiry before it is a problem too (NFD drops what follows).
    Pure; never raises.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    problems = []
    if len(data) > MAX_FILE_BYTES:
        problems.append(f"file is {len(data)} bytes; NFD ignores files over "
                        f"{MAX_FILE_BYTES} bytes")
    skip_label = False
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.decode("utf-8", "replace").strip()
        where = f"line {number}"
        if line.startswith("# +"):
            key, _, value = line[3:].partition("=")
            problems += [f"{where}: {p}" for p in _directive_problems(key, value, now)]
            skip_label = skip_label or key == "no-label"
        elif line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            if not key:
                problems.append(f"{where}: feature with an empty name")
            elif not skip_label:
                label = label_problems(key, value if sep else "true")
                problems += [f"{where}: {p}" for p in label]
            skip_label = False
    return problems


def _directive_problems(key: str, value: str, now: dt.datetime | None) -> list[str]:
    """Problems of one ``# +key[=value]`` directive: an unknown ``key``, an ``expiry-time``
    that is not RFC 3339 or (with ``now``) already past.
    """
    if key not in DIRECTIVES:
        return [f"unknown directive {key!r} (NFD knows {', '.join(sorted(DIRECTIVES))})"]
    if key != "expiry-time":
        return []
    when = _expiry(value)
    if when is None:
        return [f"expiry-time {value.strip()!r} is not RFC 3339"]
    if now is not None and when < now:
        return [f"expired at {value.strip()}; NFD ignores the features after it"]
    return []


def write_feature_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a dot-file in the same folder, fsynced, then
    renamed (:func:`pinning.util.files.atomic_write_bytes`), as NFD's guide asks; ``-`` is
    standard output. ``OSError`` from the file system (the caller wraps it).
    """
    from pinning.util.files import atomic_write_bytes

    atomic_write_bytes(path, text.encode("utf-8"))
