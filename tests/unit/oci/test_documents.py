"""OCI image documents: the same layers, epoch, env and labels give the same digest."""

from __future__ import annotations

import json

from pinning.image.layers import gzip_layer
from pinning.oci.documents import image_docs


def test_oci_documents_are_deterministic() -> None:
    layer = gzip_layer(b"tar bytes")
    a = image_docs([layer], epoch=1700000000, env={"B": "2", "A": "1"}, labels={"k": "v"})
    b = image_docs([layer], epoch=1700000000, env={"A": "1", "B": "2"}, labels={"k": "v"})
    assert a.manifest == b.manifest and a.digest == b.digest
    config = json.loads(a.config)
    assert config["created"] == "2023-11-14T22:13:20Z"
    assert config["config"]["Env"] == ["A=1", "B=2"]
    assert config["rootfs"]["diff_ids"] == [layer.diff_id]
    manifest = json.loads(a.manifest)
    assert manifest["config"]["digest"] == a.config_digest
    assert manifest["layers"][0] == {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                     "digest": layer.digest, "size": layer.size}
    assert image_docs([layer], epoch=1700000001).digest != a.digest
