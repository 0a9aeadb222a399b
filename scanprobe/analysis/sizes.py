"""Byte sizes and their human form."""

from __future__ import annotations


def human_bytes(n: int | None) -> str:
    """1234567 -> '1.2 MB (1,234,567 B)'. Decimal units, as the seeds and issues quote them."""
    if n is None:
        return "unknown"
    units = [("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)]
    for unit, size in units:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def parse_bytes(text: str) -> int:
    """'512MiB' / '8GB' / '1000' -> bytes."""
    t = text.strip().replace(" ", "")
    units = {
        "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
        "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "B": 1,
    }
    upper = t.upper()
    for u in sorted(units, key=len, reverse=True):
        if upper.endswith(u):
            return int(float(t[: -len(u)]) * units[u])
    return int(float(t))
