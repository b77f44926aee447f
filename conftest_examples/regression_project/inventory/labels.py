"""Shipping labels."""

from __future__ import annotations


def label(order_id: int, batch: int) -> str:
    """The label printed on a batch's box."""
    return f"order {order_id:06d} / batch {batch}"


def header(warehouse: str) -> str:
    """The first line of a packing list."""
    return f"Packing list, {warehouse}"
