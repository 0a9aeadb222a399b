"""The --html report: self-contained, and rendered for real in headless Chromium."""

import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import SAMPLES, scanprobe

pytestmark = pytest.mark.once_per_python  # the page and its rendering are scanprobe's own (conftest.RUN_ELSEWHERE)

SEED = SAMPLES / "seed000_pixel_loop.py"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed: scripts/test installs it (apt-get install chromium)")
    return path


def test_html_report_is_self_contained_and_renders(backend, tmp_path):
    report = tmp_path / "report.html"
    res = scanprobe("inspect", SEED, "--html", report, env={"SEED000_SIZE": "real"})
    assert res.rc == 1, res
    text = report.read_text()
    assert "<script" not in text and "src=\"http" not in text and "href=\"http" not in text
    assert text.count("25.2 GB") >= 4  # two findings, two table rows (and the graph labels)
    assert "<svg" in text  # the graph picture, inlined
    browser = chromium()
    with tempfile.TemporaryDirectory() as profile:
        shot = tmp_path / "report.png"
        subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1400,1000",
             f"--screenshot={shot}", report.as_uri()],
            capture_output=True, timeout=120, check=False,
        )
        assert shot.exists() and shot.stat().st_size > 20_000
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        dom = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", report.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        ).stdout
    assert re.search(r"[23] findings", dom) and "full: removable" in dom


def test_html_write_replaces_atomically(backend, tmp_path):
    report = tmp_path / "report.html"
    report.write_text("old")
    res = scanprobe("inspect", SAMPLES / "mlp_no_scan.py", "--html", report)
    assert res.rc == 0, res
    assert "no scan in this function" in report.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
