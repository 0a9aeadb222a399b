"""Seed 000: the gradient of a per-pixel scan keeps n_steps+1 copies of its non_sequences."""

import json
import re
import subprocess
import sys

from conftest import ROOT, SAMPLES, child_env, scanprobe
from helpers import buffers, findings

SAMPLE = SAMPLES / "seed000_pixel_loop.py"
GRAD_LINE = next(i for i, line in enumerate(SAMPLE.read_text().splitlines(), 1) if "T.grad(" in line)
CLEAN = SAMPLES / "seed000_pixel_loop_clean.py"


def test_fast_compile_finds_both_gradient_accumulators(backend):
    res = scanprobe("inspect", SAMPLE, "--mode", "FAST_COMPILE", "--format", "json")
    assert res.rc == 1, res
    rep = res.json()
    # the two accumulators (and, where the backend computes it, the gradient with respect to the
    # integer index sequence that nothing reads: 512 B, test_verdicts covers unused outputs)
    found = [f for f in findings(rep) if "nothing reads it" not in f["message"]]
    assert len(found) == 2, found
    messages = " ".join(f["message"] for f in found)
    assert "gradient accumulator of non_sequence `input` (`images`)" in messages
    assert "gradient accumulator of non_sequence `bias`" in messages
    for f in found:
        assert f["scan"] == "grad_of_scan_fn"
        assert f["bytes"] == 65 * 8 * 3 * 8 * 8 * 4
        assert "65 rows (n_steps+1)" in f["message"]
        assert f["site"]["line"] == GRAD_LINE and "T.grad" in f["site"]["code"]
        assert any("FAST_COMPILE does not run the save-mem rewrite" in e for e in f["explanation"])
    full = [b for b in buffers(rep) if b["status"] == "full" and b["verdict"] == "removable"]
    assert {tuple(b["shape"]) for b in full} == {(65, 8, 3, 8, 8)}
    assert all(b["leading_offset"] == 1 for b in full)


def test_real_size_predicted_without_allocating(backend, tmp_path):
    # in a process of its own, which reports its own peak memory: VmHWM, not ru_maxrss, which
    # Linux carries over exec from the (large) test process that started it
    out = tmp_path / "report.json"
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from scanprobe.cli import main\n"
        f"r = CliRunner().invoke(main, ['inspect', {str(SAMPLE)!r}, '--mode', 'FAST_COMPILE', '--format', 'json'])\n"
        f"open({str(out)!r}, 'w').write(r.stdout)\n"
        "from scanprobe.runners.memory import peak_rss_bytes\n"
        "print(r.exit_code, peak_rss_bytes() // 1024)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(SEED000_SIZE="real"), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rc, peak_kib = map(int, proc.stdout.split()[-2:])
    assert rc == 1, out.read_text()[-2000:]
    rep = json.loads(out.read_text())
    found = [f for f in findings(rep) if "gradient accumulator" in f["message"]]
    assert [f["bytes"] for f in found] == [25_190_400_000, 25_190_400_000]
    # plus, where the backend computes it, the unread gradient of the index: 1024 x 2 int32
    assert rep["summary"]["removable_bytes"] in (50_380_800_000, 50_380_800_000 + 1024 * 2 * 4)
    full = [b for b in buffers(rep) if b["verdict"] == "removable"]
    assert all(b["shape"] == [1025, 2000, 3, 32, 32] for b in full)
    assert all("Alloc(0.0, 1025, " in b["created_by"] for b in full)
    # the whole run (backend import, module, compile, analysis) stays far below 1 GB
    assert peak_kib < 1024 * 1024, f"peak RSS {peak_kib} KiB"


def test_fast_run_has_no_finding_and_lists_reduced_buffers(backend):
    res = scanprobe("inspect", SAMPLE, "--mode", "FAST_RUN", "--format", "json")
    assert res.rc == 0, res
    rep = res.json()
    assert findings(rep) == []
    bufs = buffers(rep)
    reduced = [b for b in bufs if b["status"] == "reduced"]
    assert len(reduced) == 2, bufs
    for b in reduced:
        assert b["bytes"] is not None and b["bytes"] <= 2 * 8 * 3 * 8 * 8 * 4
        assert "gradient accumulator of non_sequence" in b["belongs_to"]


def test_module_mode_is_analysed_without_mode_option(backend):
    rep = scanprobe("inspect", SAMPLE, "--format", "json").json()
    assert rep["targets"][0]["mode"]["name"] == "FAST_COMPILE" and not rep["targets"][0]["mode"]["from_cli"]
    assert len([f for f in findings(rep) if "gradient accumulator" in f["message"]]) == 2
    rep = scanprobe("inspect", SAMPLE, "--format", "json", env={"SEED000_MODE": "FAST_RUN"}).json()
    assert findings(rep) == []


def test_clean_variant_has_no_scan(backend):
    res = scanprobe("inspect", CLEAN, "--mode", "FAST_COMPILE", "--format", "json")
    assert res.rc == 0, res
    assert res.json()["targets"][0]["scans"] == []


def test_terminal_report_names_the_problem(backend):
    res = scanprobe("inspect", SAMPLE, "--mode", "FAST_COMPILE")
    assert res.rc == 1
    assert "SP001" in res.out
    assert "Alloc(0.0, 65, 8, 3, 8, 8)" in res.out
    assert "\x1b[" not in res.out  # plain text in a pipe
    assert re.search(r"[23] findings", res.out)
