"""Benchmark: seed 002 (mean of squared per-example gradients), naive scan versus scanprobe's fix.

Side by side in one process, for each batch size: the sample's naive scan (`grad(cost[i], p) ** 2`
in a scan over the batch), the function `scanprobe.fix` returns for it (the sum-of-squares form:
one backward pass), the per-example graph (the clone-with-slice answer, scanprobe's fallback form),
and the floor: one ordinary gradient of the batch's mean cost. Where installed (the PyTensor
environment; `bench/run` installs torch 2.13.0 CPU and BackPACK there), the same model and data
also through the reference solutions a user would write: PyTensor's `jacobian(vectorize=True)`,
`vectorize_graph` of the step, `torch.func.vmap(torch.func.grad(...))`, BackPACK's
`SumGradSquared`, and `jax.vmap(jax.grad(...))` (jitted, float64). Times are medians of repeated
calls; every result is compared with the naive one (float64).

Usage (inside one backend's environment): python bench/bench_seed002.py [--batches 64,128,...]
Writes bench/results/seed002_<backend>.json.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from _common import provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sample_graphs"))
sys.path.insert(0, str(ROOT))


def timed(fn, args, budget_s, min_runs=3, max_runs=50):
    fn(*args)  # warm-up
    times = []
    t_start = time.perf_counter()
    while len(times) < max_runs and (len(times) < min_runs or time.perf_counter() - t_start < budget_s):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def slope(xs, ys):
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    return float(np.polyfit(lx, ly, 1)[0])


def versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name, dist in (("torch", "torch"), ("backpack", "backpack-for-pytorch"), ("jax", "jax")):
        try:
            out[name] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def others(m):
    """The reference solutions of other tools on the same model, parameters and data."""
    forms = []
    params = [p.get_value() for p in m.params]  # W1 (D,H), b1, W2 (H,K), b2
    if m.BACKEND == "pytensor":
        import pytensor
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        jac = [pt.sqr(pytensor.gradient.jacobian(m.cost, p, vectorize=True)).mean(axis=0) for p in m.params]
        forms.append(("pytensor_jacobian_vectorize", pytensor.function([m.x, m.y], jac)))
        i = pt.lscalar("i")
        step = [pt.grad(m.cost[i], p) ** 2 for p in m.params]
        batched = vectorize_graph(step, replace={i: pt.arange(m.x.shape[0])})
        forms.append(("pytensor_vectorize_graph", pytensor.function([m.x, m.y], [b.mean(axis=0) for b in batched])))
    try:
        import torch
        from torch.func import grad, vmap

        torch.set_num_threads(os.cpu_count() or 1)
        tp = [torch.tensor(p) for p in params]

        def loss(ps, xb, yb):
            w1, c1, w2, c2 = ps
            out = torch.tanh(xb @ w1 + c1) @ w2 + c2
            return ((out - yb) ** 2).sum()

        per_ex = vmap(grad(loss), in_dims=(None, 0, 0))

        def torch_vmap(X, Y):
            with torch.no_grad():
                gs = per_ex(tp, torch.from_numpy(X), torch.from_numpy(Y))
                return [(g ** 2).mean(0).numpy() for g in gs]

        forms.append(("torch_func_vmap_grad", torch_vmap))
        try:
            from backpack import backpack, extend
            from backpack.extensions import SumGradSquared

            l1, l2 = torch.nn.Linear(m.D, m.H).double(), torch.nn.Linear(m.H, m.K).double()
            with torch.no_grad():
                l1.weight.copy_(torch.tensor(params[0].T)), l1.bias.copy_(torch.tensor(params[1]))
                l2.weight.copy_(torch.tensor(params[2].T)), l2.bias.copy_(torch.tensor(params[3]))
            model = extend(torch.nn.Sequential(l1, torch.nn.Tanh(), l2))
            lossfn = extend(torch.nn.MSELoss(reduction="sum"))

            def backpack_sgs(X, Y):
                model.zero_grad()
                x, y = torch.from_numpy(X), torch.from_numpy(Y)
                with backpack(SumGradSquared()):
                    lossfn(model(x), y).backward()
                n = x.shape[0]
                return [(l1.weight.sum_grad_squared.T / n).numpy(), (l1.bias.sum_grad_squared / n).numpy(),
                        (l2.weight.sum_grad_squared.T / n).numpy(), (l2.bias.sum_grad_squared / n).numpy()]

            forms.append(("backpack_sum_grad_squared", backpack_sgs))
        except ImportError:
            pass
    except ImportError:
        pass
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        jp = [jnp.asarray(p) for p in params]

        def jloss(ps, xb, yb):
            w1, c1, w2, c2 = ps
            out = jnp.tanh(xb @ w1 + c1) @ w2 + c2
            return ((out - yb) ** 2).sum()

        jf = jax.jit(lambda ps, X, Y: [(g ** 2).mean(0) for g in jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0))(ps, X, Y)])

        def jax_vmap(X, Y):
            return [np.asarray(o) for o in jax.block_until_ready(jf(jp, X, Y))]

        forms.append(("jax_vmap_grad", jax_vmap))
    except ImportError:
        pass
    return forms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="64,128,256,512,1024")
    ap.add_argument("--size", default="medium")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of repeated calls per form and batch")
    ap.add_argument("--no-others", action="store_true", help="only the backend's own forms")
    opts = ap.parse_args()
    os.environ["SEED002_SIZE"] = opts.size
    import scanprobe
    import seed002_per_example_grads as m
    from scanprobe.fixes import per_example as rewrites
    from scanprobe.fixes.graph_edit import Wanted, apply

    th, T = m.th, m.T
    naive = m.mean_sq_grads
    fixed = scanprobe.fix([m.x, m.y], m.g_square, verify=False)
    assert any(r["form"] == "sum-of-squares" for r in fixed.rewrites), fixed.rewrites
    # the per-example graph (the clone-with-slice answer): scanprobe's fallback form, forced by
    # asking for the per-example squares themselves and summing them afterwards
    per_example_outs = [s.sum(axis=0) / m.x.shape[0] for s in m.sq]
    be = scanprobe.api._backend_for(m.x)
    rw = rewrites.per_example(be, list(m.sq), Wanted.every_scan())
    assert rw[0].form == "per-example", rw[0].plain()
    new_sq = apply(be.api, list(m.sq), rw)
    per_example = th.function([m.x, m.y], [s.sum(axis=0) / m.x.shape[0] for s in new_sq])
    floor = th.function([m.x, m.y], T.grad(T.mean(m.cost), m.params))
    del per_example_outs
    forms = [("naive", naive), ("fixed", fixed), ("per_example", per_example), ("floor", floor)]
    forms += others(m) if not opts.no_others else []
    rng = np.random.default_rng(0)
    rows = []
    for B in [int(b) for b in opts.batches.split(",")]:
        X, Y = rng.normal(size=(B, m.D)), rng.normal(size=(B, m.K))
        ref = naive(X, Y)
        diffs = {}
        for label, fn in forms:
            if label in ("naive", "floor"):
                continue
            out = fn(X, Y)
            diffs[label] = max(
                float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.abs(a).max()) for a, b in zip(ref, out)
            )
        row = {"batch": B, "max_rel_diff": diffs}
        for label, fn in forms:
            row[f"{label}_s"], row[f"{label}_runs"] = timed(fn, (X, Y), opts.budget)
        row["speedup_fixed_vs_naive"] = row["naive_s"] / row["fixed_s"]
        row["fixed_over_floor"] = row["fixed_s"] / row["floor_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    bs = [r["batch"] for r in rows]
    result = {
        **provenance(m.BACKEND, f"python bench/bench_seed002.py --batches {opts.batches} --size {opts.size} --budget {opts.budget}", backend_version=th.__version__),
        "numpy": np.__version__,
        "size": {"inputs": m.D, "hidden": m.H, "outputs": m.K, "dtype": "float64"},
        "rows": rows,
        "forms": [label for label, _ in forms],
        "versions": versions(),
        "slopes": {k: slope(bs, [r[f"{k}_s"] for r in rows]) for k, _ in forms},
    }
    out = ROOT / "bench" / "results" / f"seed002_{m.BACKEND}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
