"""A corrupt cosign signature manifest (``sha256-<hex>.sig``) in the registry: ``layers: 5``,
deep nesting, layers that are not objects. ``pin sign`` and ``pin verify-image`` refuse it
with exit 9 and the reason, never exit 1; the pure check is property-tested."""

from __future__ import annotations

import http.server
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.errors import SignatureError
from pinning.sign.cosign import SIMPLE_SIGNING, manifest_layers, sig_tag
from pinning.sign.crypto import generate
from pinning.util.digests import sha256_digest
from tests.support.cli import pin
from tests.support.httpserve import serving

IMAGE_MANIFEST = b'{"schemaVersion":2,"layers":[]}'
IMAGE_DIGEST = sha256_digest(IMAGE_MANIFEST)
GOOD_LAYER = {"mediaType": SIMPLE_SIGNING, "digest": "sha256:" + "ab" * 32, "size": 10,
              "annotations": {"dev.cosignproject.cosign/signature": "MEUC"}}

CORRUPT: list[tuple[str, bytes, str]] = [
    ("layers-is-a-number", b'{"schemaVersion":2,"layers":5}', "`layers` is a int, not a list"),
    ("deep-nesting", b'{"layers":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "JSON nested too deeply"),
    ("layer-not-an-object", b'{"layers":[1,"x"]}', "layers[0] is a int, not an object"),
    ("layer-without-digest", json.dumps({"layers": [{"mediaType": SIMPLE_SIGNING}]}).encode(),
     "layers[0] has no `digest`"),
    ("digest-not-sha256", json.dumps({"layers": [{**GOOD_LAYER, "digest": "../../etc"}]}).encode(),
     "layers[0] has no `digest` of the form sha256:<64 hex>"),
    ("annotations-not-strings",
     json.dumps({"layers": [GOOD_LAYER, {**GOOD_LAYER, "annotations": {"a": [1]}}]}).encode(),
     "layers[1] has `annotations` that are not an object of strings"),
    ("size-negative", json.dumps({"layers": [{**GOOD_LAYER, "size": -1}]}).encode(),
     "layers[0] has a `size`"),
    ("top-level-list", b"[1,2,3]", "the manifest is a JSON list, not an object"),
    ("not-json", b"\xff\xfe{", "not JSON"),
]


@pytest.mark.parametrize("raw,reason", [(r, why) for _, r, why in CORRUPT],
                         ids=[name for name, _, _ in CORRUPT])
def test_corrupt_manifest_is_a_signature_error_with_the_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(SignatureError) as info:
        manifest_layers(raw, "pin/trial:sha256-x.sig")
    assert info.value.exit_code == 9
    assert "pin/trial:sha256-x.sig is not a valid signature manifest" in info.value.message
    assert reason in info.value.message


def test_well_formed_manifest_gives_its_layers() -> None:
    raw = json.dumps({"schemaVersion": 2, "layers": [GOOD_LAYER]}).encode()
    assert manifest_layers(raw, "r:t") == [GOOD_LAYER]
    assert manifest_layers(b'{"schemaVersion":2}', "r:t") == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@given(layers=JSON, extra=st.dictionaries(st.text(), JSON, max_size=3))
def test_arbitrary_manifest_gives_layers_or_a_signature_error(layers: Any,
                                                              extra: dict[str, Any]) -> None:
    raw = json.dumps({**extra, "layers": layers}).encode()
    try:
        out = manifest_layers(raw, "r:t")
    except SignatureError as exc:
        assert exc.exit_code == 9 and "r:t is not a valid signature manifest" in exc.message
        return
    for layer in out:  # what pin reads from each layer has the shape it reads
        assert isinstance(layer["digest"], str) and isinstance(layer["mediaType"], str)
        assert all(isinstance(v, str) for v in layer.get("annotations", {}).values())


@dataclass
class FakeRegistry:
    """What a registry serves: manifests by ``(repo, tag or digest)``; uploads are refused
    (a corrupt signature manifest must stop pin before it pushes anything)."""

    manifests: dict[tuple[str, str], bytes] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)


def _handler(state: FakeRegistry) -> type[http.server.BaseHTTPRequestHandler]:
    manifest_path = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def _manifest(self) -> bytes | None:
            m = manifest_path.match(self.path)
            return state.manifests.get((m.group(1), m.group(2))) if m else None

        def _answer(self, with_body: bool) -> None:
            if self.path == "/v2/":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = self._manifest()
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Docker-Content-Digest", sha256_digest(body))
            self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def _refuse(self) -> None:
            state.writes.append(f"{self.command} {self.path}")
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_PUT = do_POST = _refuse  # http.server dispatches on these names

    return Handler


@pytest.fixture
def registry() -> Iterator[tuple[str, FakeRegistry]]:
    state = FakeRegistry()
    with serving(_handler(state)) as port:
        yield f"127.0.0.1:{port}", state


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("keys") / "pin", b"correct horse")


@pytest.mark.parametrize("raw,reason", [(r, why) for name, r, why in CORRUPT
                                        if name in ("layers-is-a-number", "deep-nesting",
                                                    "layer-not-an-object")],
                         ids=["layers-is-a-number", "deep-nesting", "layer-not-an-object"])
def test_sign_and_verify_image_refuse_a_corrupt_sig_manifest(
        registry: tuple[str, FakeRegistry], keys: tuple[Path, Path], raw: bytes,
        reason: str) -> None:
    host, state = registry
    state.manifests[("pin/trial", IMAGE_DIGEST)] = IMAGE_MANIFEST
    state.manifests[("pin/trial", sig_tag(IMAGE_DIGEST, ".sig"))] = raw
    ref = f"{host}/pin/trial@{IMAGE_DIGEST}"
    key, pub = keys
    env = {**os.environ, "PIN_KEY_PASSWORD": "correct horse"}

    signed = pin("sign", ref, "--key", str(key), env=env)
    assert signed.returncode == 9, signed.stderr
    assert "is not a valid signature manifest" in signed.stderr and reason in signed.stderr
    assert "bug in pin" not in signed.stderr and "Traceback" not in signed.stderr
    assert state.writes == []  # refused before anything was pushed

    checked = pin("verify-image", ref, "--key", str(pub), env=env)
    assert checked.returncode == 9, checked.stderr
    assert "is not a valid signature manifest" in checked.stderr and reason in checked.stderr
    assert "bug in pin" not in checked.stderr and "Traceback" not in checked.stderr
