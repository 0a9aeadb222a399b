"""Golden files: the terminal report of each sample, per backend.

Regenerate after an intended change with ``SCANPROBE_REGEN_GOLDEN=1 bash scripts/test -k golden``
and review the diff.
"""

import os

import pytest

from conftest import BACKEND, ROOT, SAMPLES, scanprobe

CASES = [
    ("seed000_pixel_loop.py", ["--mode", "FAST_COMPILE"]),
    ("seed000_pixel_loop.py", []),
    ("seed000_pixel_loop.py", ["--mode", "FAST_RUN"]),
    ("seed000_pixel_loop_clean.py", []),
    ("rnn_bptt.py", []),
    ("rnn_bptt.py", ["--mode", "FAST_COMPILE"]),
    ("mlp_no_scan.py", []),
]


def golden_path(sample, args):
    suffix = "".join(f"_{a.strip('-').lower()}" for a in args)
    return ROOT / "tests" / "golden" / BACKEND / f"{sample[:-3]}{suffix}.txt"


@pytest.mark.parametrize("sample, args", CASES, ids=[f"{s}{' '.join(a)}" for s, a in CASES])
def test_terminal_report_matches_golden(backend, sample, args):
    res = scanprobe("inspect", SAMPLES / sample, *args, "--no-color")
    assert res.rc in (0, 1), res
    path = golden_path(sample, args)
    if os.environ.get("SCANPROBE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(res.out)
    assert path.exists(), f"missing golden file {path}: regenerate with SCANPROBE_REGEN_GOLDEN=1"
    assert res.out == path.read_text()
