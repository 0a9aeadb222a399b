"""Benchmark: predicted scan buffers against the buffers the backend really allocates, on public
models run as their authors wrote them (issue 25, items 1 and 2: reproduce on the real code).

The models come from github:lisa-lab/DeepLearningTutorials (fetched, not copied here):
`code/lstm.py` (the six functions `train_lstm` compiles: dim_proj 64, 1000 words, x and mask of
100 x 16) and `code/rnnrbm.py` (`RnnRbm()`'s training and generation functions, a 100 x 88 piano
roll; its `midi.utils` import, MIDI file I/O, is stubbed). Each target is analysed (predicted),
then linked and called once with every Scan thunk hooked (tests/groundtruth.py), default mode.

    THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_public_truth.py /path/to/DeepLearningTutorials/code

Writes bench/results/publictruth_theano.json.
"""

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

MODELS = {
    "lstm.py": '''import numpy
import lstm
from lstm import init_params, init_tparams, build_model, adadelta
import theano
from theano import tensor

opts = dict(dim_proj=64, n_words=1000, ydim=2, encoder="lstm", use_dropout=True)
tparams = init_tparams(init_params(opts))
use_noise, x, mask, y, f_pred_prob, f_pred, cost = build_model(tparams, opts)
f_cost = theano.function([x, mask, y], cost, name="f_cost")
grads = tensor.grad(cost, wrt=list(tparams.values()))
f_grad = theano.function([x, mask, y], grads, name="f_grad")
lr = tensor.scalar(name="lr")
f_grad_shared, f_update = adadelta(lr, tparams, grads, x, mask, y, cost)
SCANPROBE_INPUTS = {"x": numpy.zeros((100, 16), dtype="int64"),
                    "mask": numpy.ones((100, 16), dtype=theano.config.floatX), "y": numpy.zeros(16, dtype="int64")}
''',
    "rnnrbm.py": '''import numpy
from rnnrbm import RnnRbm
rbm = RnnRbm()
train_function = rbm.train_function
generate_function = rbm.generate_function
SCANPROBE_INPUTS = {"#0": numpy.zeros((100, 88), dtype="float64")}
''',
}
STUBS = {
    "imdb.py": "def load_data(*a, **k):\n    raise RuntimeError('no data')\n"
               "def prepare_data(*a, **k):\n    raise RuntimeError('no data')\n",
    "midi/__init__.py": "",
    "midi/utils.py": "def midiread(*a, **k):\n    raise RuntimeError('no MIDI')\n"
                     "def midiwrite(*a, **k):\n    raise RuntimeError('no MIDI')\n",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("code", help="DeepLearningTutorials/code")
    args = ap.parse_args()
    sys.modules["theano.scan_module.scan_perform_ext"] = None  # Theano's C scan does not build on 3.11
    from groundtruth import hooked
    from scanprobe.pipeline import analyse_module
    from scanprobe.runners.child import values_for

    work = Path(tempfile.mkdtemp(prefix="scanprobe-publictruth-"))
    for rel, text in STUBS.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    sys.path.insert(0, str(work))
    rows = []
    for model, driver in MODELS.items():
        shutil.copy(Path(args.code) / model, work / model)
        path = work / f"driver_{model}"
        path.write_text(driver)
        analysis = analyse_module(str(path))
        for live in analysis.live:
            if not live.target.scans:
                continue  # f_update: no scan, nothing to compare
            predicted = sorted((b.role, b.index, [d.value for d in b.dims], s.parent is not None)
                               for s in live.target.scans for b in s.buffers)
            with hooked(live.backend) as records:
                fn = live.session.realize(live.captured)
                fn(*values_for(live, []))
            real = sorted((r["role"], r["index"], r["shape"], r["nested"] > 0) for r in records)
            rows.append({"model": model, "target": live.target.name, "predicted": len(predicted), "real": len(real),
                         "exact": sum(1 for r in real if r in predicted),
                         "missed": [r for r in real if r not in predicted],
                         "wrong": [p for p in predicted if p not in real]})
            print(rows[-1])
    import theano

    data = {
        "command": "THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_public_truth.py DeepLearningTutorials/code",
        "source": "github:lisa-lab/DeepLearningTutorials (code/lstm.py, code/rnnrbm.py)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version(),
        "backend": "theano", "backend_version": theano.__version__, "date": time.strftime("%Y-%m-%d"),
        "targets": rows,
    }
    (ROOT / "bench" / "results" / "publictruth_theano.json").write_text(json.dumps(data, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
