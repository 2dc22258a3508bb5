"""The pin service client against a fake service: the exact bytes and headers it sends,
and every refusal or failure as a ServiceError (exit 13) that quotes the service and names
the URL, never the token.
"""

from __future__ import annotations

import json

import pytest

from pinning import __version__
from pinning.errors import ServiceError, UsageError
from pinning.remote.client import QUOTE_CHARS, ServiceClient, is_loopback, service_label
from tests.unit.remote.service import BOUND, GOOD, FakeService, closed_port

SNAPSHOT = b'{\n  "host-version": 1\n}\n'


def test_a_report_sends_the_exact_bytes_headers_and_query(service: FakeService) -> None:
    client = ServiceClient(service.url + "/", GOOD)
    service.verdict = ("drift", "pin: firmware.blocks[0] 1!=2")
    answer = client.post_report("gpu01", SNAPSHOT, group="mi300x", lock="sha256:" + "a" * 64)
    assert answer["result"] == "drift" and answer["id"] == 1
    seen = service.seen[-1]
    assert (seen.method, seen.path, seen.body) == ("POST", "/api/v1/hosts/gpu01/reports",
                                                   SNAPSHOT)
    assert seen.query == {"group": ["mi300x"], "lock": ["sha256:" + "a" * 64]}
    assert seen.headers["authorization"] == f"Bearer {GOOD}"
    assert seen.headers["user-agent"] == f"pin/{__version__}"
    assert seen.headers["content-type"] == "application/json"


def test_without_a_token_no_authorization_header_is_sent(service: FakeService) -> None:
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url).post_audit(b"{}")
    assert "authorization" not in service.seen[-1].headers
    assert "HTTP 401 unauthorized" in err.value.message
    assert "A valid bearer token is needed" in err.value.message
    assert err.value.hint is not None
    assert err.value.hint.startswith("Create one with pin serve token create. No token was sent")
    assert err.value.exit_code == 13


def test_a_host_names_is_quoted_into_the_path(service: FakeService) -> None:
    ServiceClient(service.url, GOOD).post_report("a/b", SNAPSHOT, lock="sha256:" + "b" * 64)
    assert service.seen[-1].path == "/api/v1/hosts/a%2Fb/reports"


@pytest.mark.parametrize(("status", "code"), [
    (401, "unauthorized"), (403, "forbidden"), (404, "not-found"), (409, "conflict"),
    (413, "too-large"), (422, "invalid"), (503, "unavailable")])
def test_each_refusal_quotes_the_services_message_and_hint(service: FakeService, status: int,
                                                           code: str) -> None:
    service.force = service.error(status, code, f"Because {code}.", f"Do the {code} thing.")
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD).post_cost(b"{}", lock="sha256:" + "c" * 64)
    msg = err.value.message
    assert msg.startswith(f"{service.url} refused POST /api/v1/cost-verdicts: HTTP {status} "
                          f"{code}: Because {code}.")
    assert err.value.hint is not None
    assert err.value.hint == f"Do the {code} thing." or (
        status in (401, 403) and err.value.hint.startswith(f"Do the {code} thing. The token "))
    assert GOOD not in err.value.render()


def test_a_401_without_a_hint_says_how_to_give_a_token(service: FakeService) -> None:
    service.force = service.error(401, "unauthorized", "No token.")
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url).post_acceptance(b"{}")
    assert "--token-file" in err.value.hint and "PIN_TOKEN" in err.value.hint


def test_a_bound_report_token_is_refused_for_another_host(service: FakeService) -> None:
    client = ServiceClient(service.url, BOUND, token_source="$PIN_TOKEN")
    assert client.post_report("other", SNAPSHOT, lock="sha256:" + "d" * 64)["host"] == "other"
    with pytest.raises(ServiceError, match="HTTP 403 forbidden") as err:
        client.post_report("gpu01", SNAPSHOT, lock="sha256:" + "d" * 64)
    hint = err.value.hint or ""
    assert "The token sent (from $PIN_TOKEN) lacks the scope" in hint
    assert "pin serve token create --scope report|publish" in hint
    assert "--db/--config" in hint and "--report-host NAME" in hint and "short host name" in hint
    assert BOUND not in err.value.render() and "\n" not in hint


def test_a_401_names_where_the_rejected_token_came_from(service: FakeService) -> None:
    client = ServiceClient(service.url, "pin_revoked", token_source="--token-file /etc/t")
    with pytest.raises(ServiceError, match="HTTP 401") as err:
        client.post_audit(b"{}")
    hint = err.value.hint or ""
    assert "The token sent (from --token-file /etc/t) is not one the service knows" in hint
    assert "scope" not in hint and "pin_revoked" not in err.value.render()


def test_a_refused_token_without_a_known_source_is_still_explained(
        service: FakeService) -> None:
    service.force = service.error(403, "forbidden", "Publish scope needed.")
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD).post_audit(b"{}")
    assert (err.value.hint or "").startswith("The token sent lacks the scope this needs")


def test_a_garbage_error_body_is_quoted_bounded_without_control_characters(
        service: FakeService) -> None:
    garbage = b"<html>\x1b[31mProxy\x07 Error\r\n" + b"x" * 5000 + b"</html>"
    service.force = (502, {"Content-Type": "text/html"}, garbage)
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD).health()
    msg = err.value.message
    assert "HTTP 502 Bad Gateway" in msg and "Proxy Error" in msg
    assert not any(ord(ch) < 32 for ch in msg)
    assert len(msg) < len(service.url) + QUOTE_CHARS + 80


def test_a_2xx_that_is_not_json_is_not_understood(service: FakeService) -> None:
    service.force = (200, {}, b"\xff\xfenot json")
    with pytest.raises(ServiceError, match="does not understand"):
        ServiceClient(service.url).health()
    service.force = (200, {}, b"[1, 2]")
    with pytest.raises(ServiceError, match="not a JSON object"):
        ServiceClient(service.url).health()


def test_the_token_is_masked_if_the_service_echoes_it(service: FakeService) -> None:
    service.force = service.error(400, "bad-request", f"Bad header Bearer {GOOD}.", GOOD)
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD).health()
    assert GOOD not in err.value.render() and "***" in err.value.message


def test_a_redirect_is_not_followed(service: FakeService) -> None:
    service.force = (307, {"Location": "https://u:secret@elsewhere.example/api"}, b"")
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD).post_audit(b"{}")
    assert "HTTP 307" in err.value.message and "***@elsewhere.example" in err.value.message
    assert "secret" not in err.value.message and len(service.seen) == 1


def test_a_slow_service_times_out_naming_the_url(service: FakeService) -> None:
    service.delay_s = 2.0
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url, GOOD, timeout_s=0.3).health()
    assert err.value.message == (f"{service.url} did not answer GET /api/v1/health within "
                                 "0.3 s.")
    assert err.value.hint is not None
    assert err.value.hint.endswith("raise [report] timeout-s in the site configuration "
                                   "(--config FILE where the command has it, else $PIN_CONFIG, "
                                   "else /etc/pin/config.toml).")
    client = ServiceClient(service.url, GOOD, timeout_s=0.3, config="/srv/pin.toml")
    with pytest.raises(ServiceError) as err:
        client.health()
    assert (err.value.hint or "").endswith("raise [report] timeout-s in /srv/pin.toml.")


def test_a_closed_port_is_named_with_credentials_masked() -> None:
    port = closed_port()
    with pytest.raises(ServiceError) as err:
        ServiceClient(f"http://alice:hunter2@127.0.0.1:{port}", GOOD).health()
    msg = err.value.message
    assert msg == (f"Cannot reach the pin service at http://***@127.0.0.1:{port} "
                   "(GET /api/v1/health): Connection refused.")
    hint = err.value.hint or ""
    assert "pin serve is running and listening where the URL says" in hint
    assert "binds 127.0.0.1 unless given --host ADDRESS or [serve] host" in hint
    assert f"try http://***@127.0.0.1:{port}/api/v1/health" in hint
    assert "hunter2" not in err.value.render()


def test_an_unknown_host_name_is_named() -> None:
    with pytest.raises(ServiceError, match=r"Cannot reach the pin service at "
                                           r"http://no-such-host\.invalid"):
        ServiceClient("http://no-such-host.invalid", timeout_s=2).health()


def test_tls_to_a_plain_http_service_fails_naming_ca_cert(service: FakeService) -> None:
    with pytest.raises(ServiceError) as err:
        ServiceClient(service.url.replace("http:", "https:"), timeout_s=2).health()
    assert err.value.message.startswith("TLS with https://127.0.0.1:")
    assert "--ca-cert" in err.value.hint


def test_locks_go_up_as_toml_bytes_and_come_back_exact(service: FakeService) -> None:
    from tests.support.paths import ROOT

    raw = (ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock").read_bytes()
    client = ServiceClient(service.url, GOOD)
    digest = client.upload_lock(raw)["content_hash"]
    assert service.seen[-1].body == raw
    assert service.seen[-1].headers["content-type"] == "application/toml"
    assert client.upload_lock(raw)["created"] is False
    assert client.pull_lock(digest) == raw and client.pull_lock(digest[7:19]) == raw
    assert client.assign_host("gpu01", digest) == {"host": "gpu01", "lock": digest}
    assert json.loads(service.seen[-1].body) == {"lock": digest}
    with pytest.raises(ServiceError, match="HTTP 404 not-found: No stored lock"):
        client.pull_lock("sha256:" + "0" * 64)
    with pytest.raises(ServiceError, match="HTTP 422 invalid"):
        client.upload_lock(b"not = [a lock")


def test_a_plain_http_token_to_another_host_is_warned_about_once() -> None:
    lines: list[str] = []
    client = ServiceClient("http://192.0.2.1:9", GOOD, timeout_s=0.2, warn=lines.append)
    for _ in range(2):
        with pytest.raises(ServiceError):
            client.health()
    assert len(lines) == 1 and "plain http" in lines[0] and GOOD not in lines[0]
    quiet: list[str] = []
    with pytest.raises(ServiceError):
        ServiceClient(f"http://127.0.0.1:{closed_port()}", GOOD, warn=quiet.append).health()
    assert quiet == []


@pytest.mark.parametrize("url", ["ftp://x", "127.0.0.1:8470", "http://", "http://h/?a=1",
                                 "http://h:99999"])
def test_a_url_that_is_not_a_service_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError):
        ServiceClient(url)


def test_loopback_and_labels() -> None:
    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.3.2.1", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("example.org", "10.0.0.1", "192.0.2.1"))
    assert service_label("https://u:p@h:1/x") == "https://***@h:1/x"
    assert repr(ServiceClient("http://h", GOOD)) == "ServiceClient('http://h')"
