"""scanprobe graph: the seed 000 picture with its two 25.2 GB allocations highlighted."""

import shutil

import pytest

from conftest import FIXTURES, SAMPLES, scanprobe

SEED = SAMPLES / "seed000_pixel_loop.py"


def test_seed000_svg_highlights_the_two_allocations(backend, tmp_path):
    if shutil.which("dot") is None:
        pytest.fail("graphviz is not installed: scripts/_venvs.sh installs it (apt-get install graphviz)")
    out = tmp_path / "seed.svg"
    res = scanprobe("graph", SEED, "-o", out, env={"SEED000_SIZE": "real"})
    assert res.rc == 0, res
    svg = out.read_text()
    assert svg.count("25.2 GB") == 2
    assert svg.count("#cc0000") == 2  # the removable buffers are drawn in red
    assert "gradient accumulator of non_sequence `bias`" in svg
    assert "scan grad_of_scan_fn (inner graph)" in svg


def test_dot_output_needs_no_graphviz(backend, tmp_path):
    out = tmp_path / "seed.dot"
    res = scanprobe("graph", SEED, "-o", out, env={"PATH": "/nonexistent"})
    assert res.rc == 0, res
    assert "digraph" in out.read_text()


def test_missing_graphviz_is_a_clear_error(backend, tmp_path):
    res = scanprobe("graph", SEED, "-o", tmp_path / "seed.svg", env={"PATH": "/nonexistent"})
    assert res.rc == 2 and "graphviz's `dot` program is not installed" in res.err and "hint:" in res.err


def test_one_target_at_a_time(backend, tmp_path):
    res = scanprobe("graph", FIXTURES / "two_targets.py", "-o", tmp_path / "g.dot")
    assert res.rc == 2 and "pick one" in res.err
    res = scanprobe("graph", f"{FIXTURES / 'two_targets.py'}:total", "-o", tmp_path / "g.dot")
    assert res.rc == 0, res
