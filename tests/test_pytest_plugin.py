"""The pytest plugin's marker, run in a separate pytest through pytester."""

import re
import textwrap

from conftest import FIXTURES, child_env

TESTS = textwrap.dedent(
    f"""
    import sys
    import numpy as np
    import pytest
    sys.path.insert(0, {str(FIXTURES)!r})
    from _backend import T, th

    def build(mode="FAST_COMPILE"):
        W = th.shared(np.ones((30, 5), dtype="float32"), name="table")
        idx = th.shared(np.arange(30, dtype="int32"), name="idx")
        h = th.scan(lambda i, h, W: T.tanh(h + W[i]), sequences=[idx],
                    outputs_info=[T.zeros((5,), dtype="float32")], non_sequences=[W])[0]
        return th.function([], T.grad(h[-1].sum(), W), mode=mode)

    @pytest.mark.scan_memory_limit("10 kB")
    def test_over_the_limit():
        build()()

    @pytest.mark.scan_memory_limit("10 MB")
    def test_within_the_limit():
        build()()

    @pytest.mark.scan_memory_limit("1 kB")
    def test_sizes_from_the_first_call():
        x = T.matrix("x", dtype="float64")
        h = th.scan(lambda r, a: a + r, sequences=[x], outputs_info=[T.zeros((50,), dtype="float64")])[0]
        f = th.function([x], h[-1], mode="FAST_COMPILE")
        f(np.ones((100, 50)))

    def test_unmarked_is_untouched():
        build()()
    """
)


def test_marker_fails_tests_over_the_limit(backend, pytester, monkeypatch):
    for key, value in child_env().items():
        monkeypatch.setenv(key, value)
    pytester.makepyfile(test_models=TESTS)
    result = pytester.runpytest_subprocess("-q")  # the plugin loads through its entry point
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "scan memory over the 10.0 kB limit of @pytest.mark.scan_memory_limit" in out
    # the user's names: the step's parameter and the shared variable's name (PyTensor: the latter)
    assert re.search(r"SP010 gradient accumulator of non_sequence (`W` \(`table`\)|`table`) in scan", out), out
    assert "18.6 kB" in out  # 31 x 30 x 5 float32
    assert "40.4 kB" in out  # (100 + 1) x 50 float64, from the first call's shape
