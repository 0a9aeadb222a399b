"""What a measured figure can say: noise floors, and before/after compared only above them.

A peak RSS of a few pages, or a call of a few microseconds, is the measurement's noise, not the
call's: dividing one by the other printed "RSS ratio 63,992x". Every before/after comparison in
scanprobe's output goes through ``compare``: a ratio only where both sides are above the floor,
"under the noise floor" where a side is not, and a slowdown said as a slowdown.
"""

from __future__ import annotations

from dataclasses import dataclass

#: RSS above the pre-call level, sampled: page- and arena-granular (the allocator keeps and
#: reuses freed arenas, the sampler may miss a short peak), so growth under 1 MiB says nothing
RSS_FLOOR = 1 << 20
#: tracemalloc's peak is exact, but any call allocates its frames and small outputs
TRACEMALLOC_FLOOR = 16 << 10
#: a median call time under a millisecond is dominated by the timer and the scheduler
TIME_FLOOR_S = 1e-3
#: a fixed call this much slower than the original is said as a warning, when both calls take at
#: least ``SLOWER_MIN_S`` (a few runs of a shorter call vary by more than 10% from run to run)
SLOWER_WARNING = 1.10
SLOWER_MIN_S = 0.02


@dataclass(frozen=True)
class Quantity:
    """How a kind of figure is compared: its noise floor and the words for lower and higher."""

    floor: float
    lower: str = "less"
    higher: str = "more"


MEMORY_RSS = Quantity(RSS_FLOOR)
MEMORY_TRACED = Quantity(TRACEMALLOC_FLOOR)
PREDICTED = Quantity(1)  # a prediction has no noise: any two sizes compare
TIME = Quantity(TIME_FLOOR_S, lower="faster", higher="slower")


def compare(before, after, q: Quantity) -> str:
    """``29.0x less``, ``1.8x slower``, ``> 40x less (after: under the noise floor)``, or ``—``."""
    if before is None or after is None:
        return "—"
    low_b, low_a = before < q.floor, after < q.floor
    if low_b and low_a:
        return "— (both under the noise floor)"
    if low_a:
        if after <= 0 and q is PREDICTED:
            return "all gone"
        if before / q.floor < 2:
            return "— (after: under the noise floor)"
        return f"> {before / q.floor:,.0f}x {q.lower} (after: under the noise floor)"
    if low_b:
        if after / q.floor < 2:
            return "— (before: under the noise floor)"
        return f"> {after / q.floor:,.0f}x {q.higher} (before: under the noise floor)"
    if after <= before:
        return f"{before / after:,.1f}x {q.lower}" if after != before else "same"
    return f"{after / before:,.1f}x {q.higher}"


def slower(before_s, after_s) -> float | None:
    """How many times longer the fixed call takes, when it is more than ``SLOWER_WARNING`` times
    and both take at least ``SLOWER_MIN_S``; else None."""
    if before_s is None or after_s is None or min(before_s, after_s) < SLOWER_MIN_S:
        return None
    ratio = after_s / before_s
    return ratio if ratio > SLOWER_WARNING else None
