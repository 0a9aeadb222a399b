"""Golden files: the terminal report of each sample, per backend.

Regenerate after an intended change with ``SCANPROBE_REGEN_GOLDEN=1 bash scripts/test -k golden``
and review the diff. Version strings and node counts are normalized (conftest.normalize); output
that legitimately differs in one version lives in tests/golden/<backend>-<major.minor>/.
"""

import pytest

from conftest import SAMPLES, check_golden, scanprobe

pytestmark = pytest.mark.same_backend  # reports read from the analysis (conftest.RUN_ELSEWHERE)

CASES = [
    ("seed000_pixel_loop.py", ["--mode", "FAST_COMPILE"]),
    ("seed000_pixel_loop.py", []),
    ("seed000_pixel_loop.py", ["--mode", "FAST_RUN"]),
    ("seed000_pixel_loop_clean.py", []),
    ("rnn_bptt.py", []),
    ("rnn_bptt.py", ["--mode", "FAST_COMPILE"]),
    ("mlp_no_scan.py", []),
    # every other sample that compiles on every leg (issue 27: the text a person reads, reviewed)
    ("rnn_mean_pool.py", []),
    ("rnn_mean_pool_clean.py", []),
    ("lstm_classifier.py", []),
    ("seed002_per_example_grads.py", []),
    ("seed002_clean.py", []),
    ("seed001_fixed.py", []),
]


def golden_name(sample, args):
    suffix = "".join(f"_{a.strip('-').lower()}" for a in args)
    return f"{sample[:-3]}{suffix}.txt"


@pytest.mark.parametrize("sample, args", CASES, ids=[f"{s}{' '.join(a)}" for s, a in CASES])
def test_terminal_report_matches_golden(backend, sample, args):
    res = scanprobe("inspect", SAMPLES / sample, *args, "--no-color")
    assert res.rc in (0, 1), res
    check_golden(golden_name(sample, args), res.out)
