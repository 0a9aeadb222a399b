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
    body = scanprobe("inspect", SEED, "--format", "json", env={"SEED000_SIZE": "real"}).json()
    droppable = [b for t in body["targets"] for s in t["scans"] for b in s["buffers"]
                 if b["verdict"] in ("removable", "unused", "zero-fed", "per-step terms", "folded")]
    assert len(droppable) >= 2  # Theano adds an unused int32 gradient of 512 B
    assert svg.count("#cc0000") == len(droppable)  # the buffers a fix drops are drawn in red
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


@pytest.mark.parametrize("sample", ["seed000_pixel_loop.py", "lstm_classifier.py", "seed002_per_example_grads.py"])
def test_the_picture_holds_every_buffer_the_table_lists(backend, sample, tmp_path):
    """Issue 27, item 5: `graph` said "2 scan buffers" where the table listed 3 (a per-step
    output's buffer, allocated by the scan itself, had no node to go on). Every buffer is on the
    node that creates it, else on its scan's node; nested scans' clusters sit inside their parent's."""
    import re

    body = scanprobe("inspect", SAMPLES / sample, "--format", "json").json()
    (t,) = body["targets"]
    buffers = [b for s in t["scans"] for b in s["buffers"]]
    res = scanprobe("graph", SAMPLES / sample, "-o", tmp_path / "g.dot")
    assert res.rc == 0, res
    assert f", {len(buffers)} scan buffers" in res.out, (res.out, len(buffers))
    dot = (tmp_path / "g.dot").read_text()
    for b in buffers:
        assert b["belongs_to"].split("`")[0] in dot
    # every cluster opened is closed before a sibling opens: graphviz nests them, never overlaps
    assert dot.count("subgraph cluster_") == len(re.findall(r"scan \S+ \(inner graph\)", dot))
