"""Regenerate examples/scanprobe_in_a_notebook.ipynb: its cells are written here, its outputs
come from executing it in a Jupyter kernel of this environment (never edited by hand).

    .venv-pytensor-3.0/bin/python examples/make_notebook.py      # any environment with a backend,
                                                                 # ipykernel, nbclient and nbformat
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
OUT = HERE / "scanprobe_in_a_notebook.ipynb"

MD = nbformat.v4.new_markdown_cell
CODE = nbformat.v4.new_code_cell

CELLS = [
    MD("# scanprobe in a notebook\n\n"
       "A sentence encoder that averages an RNN's states over time: the scan keeps every state only "
       "for the mean. Three ways to ask scanprobe, without leaving the notebook."),
    CODE("""import numpy as np
import pytensor
import pytensor.tensor as pt
import scanprobe

rng = np.random.default_rng(0)
x = pt.tensor3("x")  # (steps, batch, features)
W_in = pytensor.shared(0.1 * rng.standard_normal((32, 256)), name="W_in")
W_rec = pytensor.shared(0.05 * rng.standard_normal((256, 256)), name="W_rec")

def step(x_t, h_prev):
    return pt.tanh(pt.dot(x_t, W_in) + pt.dot(h_prev, W_rec))

hs = pytensor.scan(step, sequences=[x], outputs_info=[pt.zeros((x.shape[1], 256))], return_updates=False)
pooled = hs.mean(axis=0)
encode = pytensor.function([x], pooled)"""),
    MD("## 1. `scanprobe.inspect(obj)`\n\nA compiled function (or a PyMC model, or symbolic outputs "
       "with `inputs=[...]`); `example=` gives the inputs' values, which size the buffers."),
    CODE("report = scanprobe.inspect(encode, example=[np.zeros((2000, 64, 32))])\nreport"),
    CODE("report.findings[0].message, report.to_json()['summary']"),
    MD("## 2. `%scanprobe EXPR`"),
    CODE("%load_ext scanprobe"),
    CODE('%scanprobe [pooled.sum()] --inputs x --example "[np.zeros((500, 64, 32))]"'),
    MD("## 3. `%%scanprobe`: run a cell with its compiles captured\n\n"
       "As `scanprobe inspect model.py` runs a module: what the cell compiles is analysed "
       "(sized from `SCANPROBE_INPUTS`, as in a module)."),
    CODE("""%%scanprobe
SCANPROBE_INPUTS = {"x": np.zeros((2000, 64, 32))}
total = hs.sum(axis=0)
summed = pytensor.function([x], total)"""),
]


def main() -> int:
    nb = nbformat.v4.new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "kernels" / "python3"
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3", "language": "python"}))
        import os

        os.environ["JUPYTER_PATH"] = tmp
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    nbformat.write(nb, OUT)
    print(f"wrote {OUT.relative_to(HERE.parent)}")
    _screenshot(nb)
    return 0


def _screenshot(nb) -> None:
    """docs/notebook.png: the first report's HTML display, as headless Chromium draws it."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    html = next(o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if o.get("output_type") == "execute_result" and "text/html" in o.get("data", {}))
    if browser is None:
        print("no Chromium: docs/notebook.png not redrawn")
        return
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "cell.html"
        page.write_text("<!doctype html><html><body style='margin:0 1em'>" + html + "</body></html>")
        shot = HERE.parent / "docs" / "notebook.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={shot}", "--window-size=1000,1000", page.as_uri()],
                       check=True, capture_output=True, timeout=300)
    print(f"wrote {shot.relative_to(HERE.parent)}")


if __name__ == "__main__":
    raise SystemExit(main())
