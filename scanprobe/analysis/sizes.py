"""Byte sizes and their human form."""

from __future__ import annotations

import math


def human_bytes(n: int | None) -> str:
    """1234567 -> '1.2 MB (1,234,567 B)'. Decimal units, as the seeds and issues quote them."""
    if n is None:
        return "unknown"
    units = [("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)]
    for unit, size in units:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def size_arg(n: int) -> str:
    """A size as an exact option value (``parse_bytes`` reads it back): 512MiB, 8GB or bytes."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def parse_bytes(text: str) -> int:
    """'512MiB' / '8GB' / '1000' -> bytes; ValueError for anything that is not a positive, finite
    size (an empty text, 0, -5, inf, nan: a budget is never silently off)."""
    t = text.strip().replace(" ", "")
    units = {
        "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
        "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "B": 1,
    }
    upper = t.upper()
    number, scale = t, 1
    for u in sorted(units, key=len, reverse=True):
        if upper.endswith(u):
            number, scale = t[: -len(u)], units[u]
            break
    value = float(number)  # ValueError for an empty or non-numeric text
    if not math.isfinite(value) or value * scale < 1:
        raise ValueError(f"not a positive size: {text!r}")
    return int(value * scale)
