"""An order-dependent failure: one test changes a module-level setting and never restores it; a later test
in the same file relies on the default. Alone, the victim passes. faildiag reruns it alone (passes), then
after the tests that ran before it in this file (fails), and halves those to name the polluter: "faildiag
reruns" says ``order_dependent: ...test_invoice_uses_the_default_currency (... polluted by
...test_a_eur_customer_sees_prices_in_eur)`` and the report's top cause is ``pytest.order_dependent``."""

from __future__ import annotations

from types import SimpleNamespace

SETTINGS = SimpleNamespace(currency="USD")  # what a settings module or a global config object is


def format_price(cents: int) -> str:
    return f"{cents / 100:.2f} {SETTINGS.currency}"


def test_prices_have_two_decimals() -> None:
    assert format_price(1999).startswith("19.99")


def test_a_eur_customer_sees_prices_in_eur() -> None:
    SETTINGS.currency = "EUR"  # the bug: changed for the whole process, never restored (use monkeypatch)
    assert format_price(500) == "5.00 EUR"


def test_invoice_uses_the_default_currency() -> None:
    assert format_price(1250) == "12.50 USD"
