"""The prices file: the shipped example is the article's table; bad files are refused by
name; R = (price x count + other) / utilisation; a GPU with no price gives no number.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.cost.prices import EXAMPLE_PRICES, find_price, gpu_key, read_prices, system_rate
from pinning.errors import UsageError

ARTICLE = Path(__file__).parents[2] / "data" / "rocm-migration-article.txt"


def test_example_is_the_articles_table() -> None:
    prices, sha = read_prices(EXAMPLE_PRICES)
    assert sha.startswith("sha256:")
    rows = {r.gpu: r for r in prices.prices}
    assert [r.gpu for r in prices.prices] == ["MI300X", "H100", "MI325X", "H200", "MI355X",
                                               "B200"]
    text = ARTICLE.read_text()
    for gpu, usd, provider, stock in (("H100", 2.59, "QuantaCloud", 8),
                                      ("H200", 3.43, "QuantaCloud", 7),
                                      ("B200", 7.20, "VERDA", 1)):
        assert (rows[gpu].usd_per_gpu_hour, rows[gpu].provider,
                rows[gpu].providers_in_stock) == (usd, provider, stock)
        assert f"| {gpu} | ${usd:.2f} | {provider} | {stock} |" in text
    for gpu in ("MI300X", "MI325X", "MI355X"):
        assert rows[gpu].usd_per_gpu_hour is None
        assert "none in stock" in (rows[gpu].unknown or "")
        assert f"| {gpu} | none in stock |" in text
    assert all(r.checked == dt.date(2026, 9, 28) and "rocm-migration-article" in r.source
               for r in prices.prices)


@pytest.mark.parametrize(("name", "key"), [("AMD Instinct MI300X", "mi300x"), ("h200", "h200"),
                                           ("NVIDIA H100", "h100"), ("H100 NVL", "h100nvl"),
                                           ("Instinct MI355X", "mi355x")])
def test_gpu_key(name: str, key: str) -> None:
    assert gpu_key(name) == key


@pytest.mark.parametrize(("body", "words"), [
    ('[[prices]]\ngpu = "H100"\nchecked = 2026-09-28\nsource = "s"\n',
     "either usd-per-gpu-hour or unknown"),
    ('[[prices]]\ngpu = "H100"\nusd-per-gpu-hour = 2.0\nunknown = "x"\nchecked = 2026-09-28\n'
     'source = "s"\n', "not both"),
    ('[[prices]]\ngpu = "H100"\nusd-per-gpu-hour = 2.0\nchecked = 2026-09-28\nsource = "s"\n'
     '[[prices]]\ngpu = "NVIDIA H100"\nusd-per-gpu-hour = 3.0\nchecked = 2026-09-28\n'
     'source = "s"\n', "listed twice"),
    ('[[prices]]\ngpu = "H100"\nusd-per-gpu-hour = -1.0\nchecked = 2026-09-28\n'
     'source = "s"\n', "prices[0]"),
    ('[[prices]]\ngpu = "H100"\nusd-per-gpu-hour = 2.0\nchecked = "yesterday"\n'
     'source = "s"\n', "checked"),
    ("prices = [", "not valid TOML"),
    ('[[prices]]\ngpu = "H100"\nusd-per-gpu-hour = 2.0\nchecked = 2026-09-28\n'
     'source = "s"\ncolour = "red"\n', "colour"),
])
def test_bad_prices_file_is_refused_by_name(tmp_path: Path, body: str, words: str) -> None:
    f = tmp_path / "p.toml"
    f.write_text(body)
    with pytest.raises(UsageError) as info:
        read_prices(f)
    assert str(f) in info.value.message and words in info.value.message


def test_system_rate_multiplies_count_adds_other_divides_utilisation() -> None:
    prices, _ = read_prices(EXAMPLE_PRICES)
    rate = system_rate(prices, "NVIDIA H200", "lock", gpu_count=8, gpu_count_from="lock",
                       other_usd_per_hour=4.0, utilisation=0.5)
    assert rate.usd_per_hour == pytest.approx((3.43 * 8 + 4.0) / 0.5)
    assert rate.price is not None and rate.price.gpu == "H200" and rate.unknown is None


@pytest.mark.parametrize(("gpu", "words"), [("Instinct MI300X", "none in stock"),
                                            ("A100", "no row for A100"),
                                            (None, "--lock LOCK or --gpu NAME")])
def test_no_price_is_unknown_never_guessed(gpu: str | None, words: str) -> None:
    prices, _ = read_prices(EXAMPLE_PRICES)
    rate = system_rate(prices, gpu, "flag" if gpu else None, gpu_count=1,
                       gpu_count_from="assumed")
    assert rate.usd_per_hour is None and words in (rate.unknown or "")
    assert find_price(prices, "B200") is not None


@pytest.mark.parametrize("u", [0.0, -0.1, 1.5])
def test_utilisation_outside_0_1_is_refused(u: float) -> None:
    prices, _ = read_prices(EXAMPLE_PRICES)
    with pytest.raises(UsageError, match="utilisation"):
        system_rate(prices, "H100", "flag", gpu_count=1, gpu_count_from="assumed",
                    utilisation=u)


def test_gpu_without_a_row_names_the_known_gpus() -> None:
    prices, _ = read_prices(EXAMPLE_PRICES)
    rate = system_rate(prices, "A100", "flag", gpu_count=1, gpu_count_from="assumed")
    assert rate.usd_per_hour is None
    assert rate.unknown == ("the prices file has no row for A100; it knows MI300X, H100, "
                            "MI325X, H200, MI355X, B200 (name one of them, or add a row for "
                            "this GPU to a copy of the file)")
    priced = system_rate(prices, "H100", "flag", gpu_count=1, gpu_count_from="assumed")
    assert priced.unknown is None and priced.usd_per_hour == 2.59
