"""Redraw docs/inspect.png, docs/profile.png and docs/fix.png: scanprobe run in a real terminal
(a tmux pane, colour on), the pane captured with its colours, drawn by headless Chromium.

    python examples/make_screenshots.py [LEG]      # LEG: which .venv-<leg> runs scanprobe (pytensor-3.3)

Needs tmux and Chromium (scripts/test installs Chromium). Each command runs in
sample_graphs/ so the paths read as a user's would.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLS, SESSION = 118, "scanprobe-shots"
SHOTS = {
    "inspect": "scanprobe inspect rnn_mean_pool.py",
    "profile": "scanprobe profile rnn_mean_pool.py --runs 3",
    "fix": "scanprobe fix rnn_mean_pool.py",
}


def _tmux(*args, check=True) -> str:
    return subprocess.run(["tmux", *args], check=check, capture_output=True, text=True).stdout


def capture(command: str, leg: str, timeout: float = 900) -> str:
    """Run ``command`` in a fresh tmux pane; the pane's text with its ANSI colours."""
    _tmux("kill-session", "-t", SESSION, check=False)
    venv = ROOT / f".venv-{leg}" / "bin"
    _tmux("new-session", "-d", "-s", SESSION, "-x", str(COLS), "-y", "200",
          f"env -i HOME=$HOME TERM=xterm-256color PATH={venv}:/usr/bin:/bin PS1='$ ' bash --norc --noprofile")
    _tmux("send-keys", "-t", SESSION, f"cd {ROOT / 'sample_graphs'} && clear", "Enter")
    time.sleep(0.5)
    _tmux("send-keys", "-t", SESSION, f"{command}; echo; echo '#'done", "Enter")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(1)
        text = _tmux("capture-pane", "-p", "-t", SESSION)
        if "\n#done" in text:
            break
    ansi = _tmux("capture-pane", "-p", "-e", "-t", SESSION, "-S", "0")
    _tmux("kill-session", "-t", SESSION, check=False)
    lines = ansi.rstrip().splitlines()
    lines = lines[: max(i for i, line in enumerate(lines) if "#done" in line)]  # drop the marker
    start = next(i for i, line in enumerate(lines) if line.startswith("$ "))
    lines[start] = f"$ {command}"  # without the end marker typed after it
    return "\n".join(lines[start:]).rstrip() + "\n"


def draw(ansi: str, png: Path) -> None:
    from rich.console import Console
    from rich.terminal_theme import MONOKAI
    from rich.text import Text

    console = Console(record=True, width=COLS, force_terminal=True, color_system="truecolor",
                      file=io.StringIO())
    console.print(Text.from_ansi(ansi), soft_wrap=True)
    svg = console.export_svg(title=ansi.splitlines()[0][2:], theme=MONOKAI)
    box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    width, height = (int(float(box.group(1))) + 1, int(float(box.group(2))) + 1) if box else (1500, 900)
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no Chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "term.html"
        page.write_text(f"<!doctype html><html><body style='margin:0'>{svg}</body></html>")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={png}", f"--window-size={width},{height}", page.as_uri()],
                       check=True, capture_output=True, timeout=300)


def main(argv) -> int:
    leg = argv[1] if len(argv) > 1 else "pytensor-3.3"
    for name, command in SHOTS.items():
        ansi = capture(command, leg)
        (ROOT / "docs" / f"{name}.ansi").write_text(ansi)
        draw(ansi, ROOT / "docs" / f"{name}.png")
        print(f"wrote docs/{name}.png ({command}, .venv-{leg})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
