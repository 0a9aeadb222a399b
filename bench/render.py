"""Write bench/RESULTS.md from bench/results/*.json (written by `bash bench/run`)."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(prefix):
    return [json.loads(p.read_text()) for p in sorted((HERE / "results").glob(f"{prefix}_*.json"))]


def mb(x):
    return "—" if x is None else f"{x / 1e6:,.1f} MB"


def sz(x):
    """kB under a megabyte, else MB."""
    return "—" if x is None else (f"{x / 1e3:,.0f} kB" if x < 1e6 else f"{x / 1e6:,.1f} MB")


def provenance(d):
    return f"`{d['command']}` on {d['machine']}, Python {d['python']}, {d['backend']} {d['backend_version']}, {d['date']}"


def table_answer():
    out = [
        "## 1. Time to answer: scanprobe's prediction versus the backend's memory profiler (seed 000)",
        "",
        "How long until a user knows how much memory `cost_and_grads` of seed 000 takes. *scanprobe*:",
        "`scanprobe inspect --format json` in a fresh process (loading = Python, backend import and the",
        "user's module; compile = the optimization scanprobe stops before linking; analysis = the walk",
        "and rules). *profile_memory*: the backend's own flags `profile=True,profile_memory=True`, run",
        "the module and call the function once. 16x16 images (256 steps), FAST_COMPILE, batch 8 to 128,",
        "both measured one after the other at each batch. At the real size (2000 images of 32x32, 1024",
        "steps) the profiler would need the 50 GB it reports on: it is never started; scanprobe's time is shown.",
        "At these scaled sizes the function itself is cheap, so both times are mostly start-up and stay",
        "flat as the batch grows; the difference is that the profiler has to allocate what it measures",
        "(its reported peak counts the scan's internal copies too: twice the buffers scanprobe predicts).",
        "",
    ]
    for d in load("answer"):
        out += [
            f"### {d['backend']} {d['backend_version']}",
            "",
            "| batch | scanprobe total | loading | compile | analysis | predicted scan buffers | profile_memory total | profiler's reported peak | profiler / scanprobe |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in d["rows"]:
            s, p = r["scanprobe"], r["profile_memory"]
            out.append(
                f"| {r['batch']} | {s['wall_s']:.2f} s | {s['loading_s']:.2f} s | {s['compile_s']:.2f} s | {s['analysis_s']:.2f} s "
                f"| {mb(s['predicted_scan_buffers_bytes'])} | {p['wall_s']:.2f} s | {mb(p['reported_peak_bytes'])} "
                f"| {r['ratio_profiler_to_scanprobe']:.1f}x |"
            )
        real = d["real"]
        out += [
            f"| 2000 (real, 32x32) | {real['wall_s']:.2f} s | {real['loading_s']:.2f} s | {real['compile_s']:.2f} s "
            f"| {real['analysis_s']:.2f} s | {mb(real['predicted_scan_buffers_bytes'])} | not run (needs > 50 GB) | — | — |",
            "",
            f"Fitted slopes of time against batch (log-log): scanprobe {d['slopes']['scanprobe']:.2f}, "
            f"profile_memory {d['slopes']['profile_memory']:.2f}.",
            "",
            f"Command: {provenance(d)}.",
            "",
        ]
    return out


def table_scaling():
    out = [
        "## 2. Analysis cost as graphs grow",
        "",
        "Synthetic modules: K scans in a chain, each step a chain of elementwise stages, some steps with",
        "a nested scan; FAST_COMPILE. *nodes*: the function's nodes plus every scan's step ops.",
        "*analysis*: scanprobe's walk of the optimized graph (inner graphs, shapes, reads, rules), from",
        "the report; compile is the backend's optimization.",
        "",
    ]
    for d in load("scaling"):
        out += [
            f"### {d['backend']} {d['backend_version']}",
            "",
            "| scans | chains x stages per step | nested scan in the step | scan records | nodes | analysis | compile | whole inspect |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in d["rows"]:
            nested = f"1 scan in {r['nested_every']}" if r["nested_every"] else "no"
            out.append(
                f"| {r['scans']} | {r.get('chains', 1)} x {r['stages']} | {nested} | {r['scan_records']} | {r['nodes']:,} | {r['analysis_s']:.2f} s "
                f"| {r['compile_s']:.2f} s | {r['wall_s']:.2f} s |"
            )
        out += [
            "",
            f"Fitted slope of log(analysis) against log(nodes), graphs of 1,000 nodes and more: "
            f"**{d['loglog_slope']:.2f}** (1 = linear); {d['seconds_per_1000_nodes'] * 1000:.1f} ms per 1,000 nodes.",
            "",
            f"Command: {provenance(d)}.",
            "",
        ]
    return out


def table_accuracy():
    out = [
        "## 3. Accuracy: predicted versus measured",
        "",
        "`scanprobe profile --runs 1` on the samples and fixtures that run, and on programs drawn from",
        "the property-based test's space (fixed seed): every top-level scan buffer's predicted bytes",
        "against the bytes a profiled run holds; per target, the measured RSS peak above the pre-call",
        "level against the predicted scan-buffer peak. *Left symbolic*: a while-loop's gradient runs as",
        "many steps as the forward loop did, so its size stays a formula, never a guess.",
        "",
        "| backend | buffers | predicted exactly | within 1% | predicted larger | left symbolic (while-loops) |",
        "|---|---|---|---|---|---|",
    ]
    data = load("accuracy")
    for d in data:
        out.append(
            f"| {d['backend']} {d['backend_version']} | {d['buffers']} | {d['exact']} | {d['within_1pct']} | {d['over']} | {d['symbolic']} |"
        )
    out.append("")
    for d in data:
        out += [
            f"Peaks, {d['backend']}:",
            "",
            "| module | target | predicted scan-buffer peak | measured RSS above pre-call | measured / predicted |",
            "|---|---|---|---|---|",
        ]
        small = 0
        for t in d["targets"]:
            if "error" in t:
                out.append(f"| {t['module']} | error: {t['error'][:80]} | | | |")
                continue
            p, m = t["predicted_peak"], t["measured_rss_peak"]
            if not p or p < 1e6:
                small += 1
                continue
            ratio = f"{m / p:.2f}" if p and m is not None else "—"
            out.append(f"| {t['module']} | {t['target']} | {mb(p)} | {mb(m)} | {ratio} |")
        out += ["", f"{small} more targets predict under 1 MB of scan buffers; their RSS readings (0.0-0.2 MB) are",
                "page and allocator noise, not a measure of the prediction.", "",
                f"Command: {provenance(d)}.", ""]
    return out


TOOLS = [
    ("naive", "naive scan (the asker's)"),
    ("fixed", "**scanprobe.fix** (sum-of-squares)"),
    ("per_example", "clone with x[i:i+1] (scanprobe's fallback; the thread's answer)"),
    ("pytensor_jacobian_vectorize", "PyTensor jacobian(vectorize=True)"),
    ("pytensor_vectorize_graph", "PyTensor vectorize_graph of the step"),
    ("torch_func_vmap_grad", "torch.func.vmap(grad)"),
    ("backpack_sum_grad_squared", "BackPACK SumGradSquared"),
    ("jax_vmap_grad", "jax.vmap(jax.grad), jit"),
    ("floor", "floor: one gradient of the batch"),
]


def table_fixes():
    out = [
        "## 4. Effect of the fixes",
        "",
        "### Seed 000: memory (`scanprobe fix`, 32 images of 3x32x32, 1024 steps, FAST_COMPILE)",
        "",
        "| backend | RSS above pre-call: before | after | clean sample (no scan, by hand) | ratio before / after | tracemalloc before / after | time before / after | outputs equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in load("fix000"):
        b, a, c = d["before"], d["after"], d["clean"]
        out.append(
            f"| {d['backend']} {d['backend_version']} | {mb(b['rss_peak_above_precall'])} | {mb(a['rss_peak_above_precall'])} "
            f"| {mb(c['rss_peak_above_precall'])} | **{d['memory_ratio']:.0f}x** | {mb(b['tracemalloc_peak'])} / {mb(a['tracemalloc_peak'])} "
            f"| {b['wall_median_s']:.2f} s / {a['wall_median_s']:.2f} s | {d['outputs_equal']} (max diff {d['max_abs_diff']:.1g}) |"
        )
    out.append("")
    for d in load("fix000"):
        out.append(f"Command: {provenance(d)}.")
    out += [
        "",
        "### Seed 002: time (mean of squared per-example gradients)",
        "",
        "`sample_graphs/seed002_per_example_grads.py` at SEED002_SIZE=medium (64 inputs, 64 hidden, 10",
        "outputs, float64), the same parameters and data for every tool. Medians of repeated calls, all",
        "forms one after the other in one process per batch; JAX is jitted and warmed up. Relative",
        "difference: max |x - naive| / max |naive| over the four parameters. Slopes: log(time) against",
        "log(batch) over 64..1024, 2 is O(B^2), 1 is O(B).",
        "",
    ]
    for d in load("seed002"):
        forms = [f for f, _ in TOOLS if f in d["forms"]]
        names = dict(TOOLS)
        out += [f"#### {d['backend']} {d['backend_version']}" + (
            f" (with {', '.join(f'{k} {v}' for k, v in d.get('versions', {}).items())})" if d.get("versions") else ""), ""]
        out.append("| batch | " + " | ".join(names[f] for f in forms) + " |")
        out.append("|---|" + "---|" * len(forms))
        for r in d["rows"]:
            out.append(f"| {r['batch']} | " + " | ".join(f"{r[f + '_s'] * 1e3:.2f} ms" for f in forms) + " |")
        r512 = next((r for r in d["rows"] if r["batch"] == 512), d["rows"][-1])
        out += [
            "",
            "| at batch " + str(r512["batch"]) + " | " + " | ".join(names[f] for f in forms) + " |",
            "|---|" + "---|" * len(forms),
            "| naive / this | " + " | ".join(f"{r512['naive_s'] / r512[f + '_s']:.1f}x" for f in forms) + " |",
            "| this / floor | " + " | ".join(f"{r512[f + '_s'] / r512['floor_s']:.2f}x" for f in forms) + " |",
            "| slope | " + " | ".join(f"{d['slopes'][f]:.2f}" for f in forms) + " |",
            "| max relative difference | " + " | ".join(
                f"{r512['max_rel_diff'][f]:.1e}" if f in r512["max_rel_diff"] else "—" for f in forms) + " |",
            "",
            f"Command: {provenance(d)}, numpy {d['numpy']}.",
            "",
        ]
    return out


def table_sp006():
    out = [
        "### SP006: memory (`scanprobe fix sample_graphs/rnn_mean_pool.py`: 2000 RNN states of 64 x 256 float32 mean-pooled)",
        "",
        "The fix carries the running sum in the step; the hand-written form (`rnn_mean_pool_clean.py`) is profiled beside it.",
        "",
        "| backend | predicted scan buffers before / after | tracemalloc before / after | ratio | RSS above pre-call before / after | clean sample (tracemalloc) | time before / after | outputs equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = load("sp006")
    for d in rows:
        b, a, c, p = d["before"], d["after"], d["clean"], d["predicted"]
        out.append(
            f"| {d['backend']} {d['backend_version']} | {mb(p['before'])} / {mb(p['after'])} | {mb(b['tracemalloc_peak'])} / "
            f"{mb(a['tracemalloc_peak'])} | **{d['tracemalloc_ratio']:.0f}x** | {mb(b['rss_peak_above_precall'])} / "
            f"{mb(a['rss_peak_above_precall'])} | {mb(c['tracemalloc_peak'])} | {b['wall_median_s']:.2f} s / {a['wall_median_s']:.2f} s "
            f"| {d['outputs_equal']} (max diff {d['max_abs_diff']:.1g}) |"
        )
    out.append("")
    for d in rows:
        out.append(f"Command: {provenance(d)}.")
    return out + [""]


def table_sp007():
    rows = load("sp007")
    if not rows:
        return []
    out = [
        "### SP007: an LSTM training step (`scanprobe fix sample_graphs/lstm_classifier.py`, batch 16, 32 units, float64, loss on h[-1])",
        "",
        "Both tapes (of `h` and `c`) become running states. Each row: the original and the fixed step run side by side in one",
        "child (median of 3 calls), in the backend's default mode and with its `more_mem` rewrites excluded (they push the weight",
        "gradient's dot out of the backward scan, leaving n_steps rows of per-step terms: part 2 of issue 26, set by hand here).",
        "",
        "| backend | steps | mode | predicted scan buffers before / after | tracemalloc before / after | RSS above pre-call before / after | time before / after | outputs equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in rows:
        for r in d["rows"]:
            for label, key in (("default", "default"), ("`more_mem` excluded", "no_more_mem")):
                x = r[key]
                b, a, p = x["before"], x["after"], x["predicted"]
                out.append(
                    f"| {d['backend']} {d['backend_version']} | {r['steps']:,} | {label} | {mb(p['before'])} / {mb(p['after'])} | "
                    f"{mb(b['tracemalloc_peak'])} / {mb(a['tracemalloc_peak'])} | {mb(b['rss_peak_above_precall'])} / "
                    f"{mb(a['rss_peak_above_precall'])} | {b['wall_median_s'] * 1e3:,.0f} ms / {a['wall_median_s'] * 1e3:,.0f} ms "
                    f"| {x['outputs_equal']} (max diff {x['max_abs_diff']:.1g}) |"
                )
    out.append("")
    for d in rows:
        out.append(f"Command: {provenance(d)}.")
    return out + [""]


def table_checkpoint():
    rows = load("checkpoint")
    if not rows:
        return []
    out = [
        "### `fix --max-buffer`: LSTM and GRU training steps, checkpointed, beside a hand-written `scan_checkpoints`",
        "",
        "`python bench/bench_checkpoint.py` on bench/models/train_step.py (batch 16, float64, loss on the last state; LSTM 32",
        "units, GRU 64). *free*: a budget the size of the forward history, met by the free fixes (SP007 tape, SP008 terms);",
        "*tight*: twice the least one level of checkpoints meets plus two copies of the largest weight, met by checkpointing",
        "the history (SP010, k ~ sqrt(n)). Original and fixed run side by side in one child (median of 3 calls); the anchor",
        "(the same model written with the backend's `scan_checkpoints`, save_every_N = N near sqrt(n), shown) runs in its own child",
        "(`scanprobe profile`). Peak: tracemalloc peak of one call (numpy's buffers included).",
        "",
        "| backend | cell | steps | budget | fixes | predicted scan buffers | peak: original / fixed (ratio) | time: original / fixed (ratio) | anchor peak / time | outputs equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in rows:
        for r in d["rows"]:
            for label in ("free", "tight"):
                x = r[label]
                b, a, p = x["before"], x["after"], x["predicted"]
                anc = r["anchor"].get("measured")
                fixes = ", ".join(x["forms"])
                out.append(
                    f"| {d['backend']} {d['backend_version']} | {r['cell']} | {r['steps']:,} | {label} {sz(x['budget'])} | "
                    f"{fixes} | {sz(p['before'])} / {sz(p['after'])} | {sz(b['tracemalloc_peak'])} / "
                    f"{sz(a['tracemalloc_peak'])} ({b['tracemalloc_peak'] / max(a['tracemalloc_peak'], 1):.1f}x lower) | "
                    f"{b['wall_median_s'] * 1e3:,.0f} / {a['wall_median_s'] * 1e3:,.0f} ms "
                    f"({a['wall_median_s'] / b['wall_median_s']:.2f}x) | "
                    + (f"{sz(anc['tracemalloc_peak'])} / {anc['wall_median_s'] * 1e3:,.0f} ms (N={r['anchor']['save_every_N']})" if anc else
                       f"fails: {r['anchor'].get('error', '')[:80]}")
                    + f" | {x['outputs_equal']} (max diff {x['max_abs_diff']:.1g}) |"
                )
    out.append("")
    for d in rows:
        out.append(f"Command: {provenance(d)}.")
    return out + [""]


def table_pymc():
    rows = load("pymc")
    if not rows:
        return []
    out = [
        "## 8. PyMC models as targets: predicted beside measured, and the SP006 fix",
        "",
        "`scanprobe profile` of the PyMC samples (the module compiles nothing; the functions are what",
        "the samplers compile, run at the model's initial point in the supervised child). Per buffer:",
        "predicted bytes (from the optimized graph, before running) and the bytes of the buffer the",
        "backend allocated.",
        "",
        "| PyMC / PyTensor | target | buffers | predicted = measured | largest buffer (predicted / measured) | gaps |",
        "|---|---|---|---|---|---|",
    ]
    for d in rows:
        for p in d["profiles"]:
            bufs = p["buffers"]
            same = sum(1 for b in bufs if b["predicted"] == b["measured"])
            big = max(bufs, key=lambda b: b["predicted"] or 0) if bufs else None
            largest = f"{big['belongs_to']}: {big['predicted']:,} / {big['measured']:,} B" if big else "—"
            out.append(f"| {d['pymc']} / {d['backend_version']} | `{p['sample']}` {p['target']} | {len(bufs)} | {same} "
                       f"| {largest} | {p['gaps']} |")
    out += ["", "`scanprobe fix sample_graphs/pymc_garch.py` (per-step log-likelihoods of 1999 x 64 float64 summed):", "",
            "| PyMC / PyTensor | target | status | predicted scan buffers before / after | tracemalloc before / after | time before / after | max diff |",
            "|---|---|---|---|---|---|---|"]
    for d in rows:
        for f in d["fix"] or []:
            out.append(f"| {d['pymc']} / {d['backend_version']} | {f['target']} | {f['status']} | {mb(f['predicted_before'])} / "
                       f"{mb(f['predicted_after'])} | {mb(f['tracemalloc_before'])} / {mb(f['tracemalloc_after'])} | "
                       f"{f['wall_before_s'] * 1e3:.2f} ms / {f['wall_after_s'] * 1e3:.2f} ms | {f['max_abs_diff']:.1g} |")
    out.append("")
    for d in rows:
        out.append(f"Command: {provenance(d)}, PyMC {d['pymc']}.")
    return out + [""]


def table_properties():
    rows = load("properties")
    if not rows:
        return []
    out = [
        "## 6. Property test at scale: random scan programs against what runs",
        "",
        "`tests/test_properties.py` with hypothesis drawing new programs: roles and taps, nested scans,",
        "while-scans, gradients, modes, float32/float64, unread outputs, reductions over time, n_steps from",
        "1 to 5,000. Each example is analysed, run with the Scan thunks hooked, and every predicted buffer",
        "(nested ones included) compared with the one allocated; verdicts checked against how the",
        "program reads its history. CI runs 12 fixed examples per leg.",
        "",
        "| backend | examples | passing | failing | time |",
        "|---|---|---|---|---|",
    ]
    for d in rows:
        out.append(f"| {d['backend']} {d['backend_version']} | {d['examples_asked']} | {d['passing']} | {d['failing']} "
                   f"| {d['seconds'] / 60:.1f} min |")
    out.append("")
    for d in rows:
        out.append(f"Command: {provenance(d)}.")
    return out + [""]


def table_suite():
    rows = load("suite")
    if not rows:
        return []
    out = [
        "## 7. Test suite time per leg (`bash .ci/run` on a clean clone)",
        "",
        "Legs set up one after another, then tested as the run's header line says: side by side",
        "(\"side by side, 2 at a time\", before 2026-12-01 noon: a leg's time includes its share of a busy",
        "machine) or one at a time with pytest-xdist workers on every core (a leg's time is its own).",
        "",
        "| leg | set-up | tests | result |",
        "|---|---|---|---|",
    ]
    for d in rows:
        if d.get("how"):
            out += [f"| *legs: {d['how']}* | | | |"]
        for leg in d["legs"]:
            out.append(f"| {leg['leg']} ({leg['version']}) | {leg.get('setup_s', '—')} s | {leg['tests_s']} s | exit {leg['exit']} |")
        whole = f"Whole CI run: {d['total_s']} s." if d["total_s"] is not None else "Legs only, not a whole CI run."
        out += ["", f"{whole} Command: `{d['command']}` on {d['machine']}, {d['date']}.", ""]
    return out


def table_inspect():
    out = [
        "## 5. Overhead of `scanprobe inspect` over the user's own compile (seed 000, real size, FAST_COMPILE)",
        "",
        "2000 images of 3x32x32, 1024 steps: two predicted `Alloc(0.0, 1025, 2000, 3, 32, 32)` of",
        "25,190,400,000 B each, found without allocating them. *Compile alone* is the user's own",
        "script: import the backend, build the same graph, `function(..., mode='FAST_COMPILE')`",
        "(optimize and link). Warm figures are medians of interleaved runs in the same session.",
        "",
        "| backend | inspect, cold cache | inspect, warm | compile alone, cold (whole script) | compile alone, warm (whole script) | of which the compile call | ratio inspect / compile alone (warm) | inspect peak RSS | predicted bytes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    commands = []
    for data in load("inspect"):
        r = data["results"]
        out.append(
            f"| {data['backend']} {data['backend_version']} | {r['inspect_cold_s']:.2f} s | {r['inspect_warm_s']:.2f} s "
            f"| {r['compile_alone_cold_total_s']:.2f} s | {r['compile_alone_warm_total_s']:.2f} s "
            f"| {r['compile_alone_warm_compile_call_s']:.2f} s | {r['ratio_inspect_to_compile_alone_total']:.2f}x "
            f"| {r['inspect_warm_peak_rss_kib'] / 1024:.0f} MiB | {' + '.join(f'{b:,}' for b in r['predicted_bytes'])} |"
        )
        commands.append(f"- {data['backend']}: `{data['command']}` on {data['machine']}, Python {data['python']}, {data['date']}")
    out += ["", "scanprobe optimizes but never links, so it answers before the user's own compile would finish.", ""]
    return out + ["Commands:", ""] + commands + [""]


def table_realmodel():
    out = [
        "## 9. `scanprobe inspect` on real models beside the user's own script (issue 25, item 7)",
        "",
        "Three model shapes: the Theano tutorial LSTM's training script (lisa-lab/DeepLearningTutorials",
        "`code/lstm.py`, fetched, not copied: the six functions `train_lstm` compiles), the tutorial",
        "RNN-RBM (`code/rnnrbm.py`: nested scans, training and generation), and a pymc-extras structural",
        "time-series model (bench/models/statespace_model.py: its Kalman filter is a scan) on PyMC 5",
        "(PyTensor 2.38) and PyMC 6 (PyTensor 3.3). *User* is a script that builds and compiles the",
        "same functions (for PyMC: what `pm.sample` and `pm.sample_posterior_predictive` compile);",
        "*inspect* analyses the same module. CPU time of whole processes, children included; three",
        "pairs interleaved in one run, warm caches. Goal: <= 1.2x.",
        "",
        "| model | backend | mode | targets | user CPU (median) | inspect CPU (median) | ratio per pair | median ratio | user wall | inspect wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    commands = []
    for data in load("realmodel"):
        pairs = data["pairs"]

        def med(key):
            vals = sorted(p[key] for p in pairs)
            return vals[len(vals) // 2]

        backend = f"{data['backend']} {data['backend_version']}" + (f" (PyMC {data['pymc']})" if data.get("pymc") else "")
        ratios = ", ".join(f"{p['inspect_cpu_s'] / p['user_cpu_s']:.2f}x" for p in pairs)
        out.append(
            f"| {data.get('shape', 'lstm')} | {backend} | {data.get('mode', 'FAST_RUN')} | {data['targets']} "
            f"| {med('user_cpu_s'):.1f} s | {med('inspect_cpu_s'):.1f} s | {ratios} | **{data['median_cpu_ratio']:.2f}x** "
            f"| {med('user_wall_s'):.1f} s | {med('inspect_wall_s'):.1f} s |"
        )
        commands.append(f"- `{data['command']}` on {data['machine']}, Python {data['python']}, {data['date']}")
    return out + ["", "Commands:", ""] + commands + [""]


def table_publictruth():
    out = [
        "## 10. Predicted buffers against the run, on public models as their authors wrote them",
        "",
        "lisa-lab/DeepLearningTutorials (fetched, not copied): the tutorial LSTM's functions and the",
        "RNN-RBM's training and generation functions (issue 25, items 1 and 2). Each target is analysed,",
        "then called once with every Scan thunk hooked (tests/groundtruth.py). A buffer is exact when",
        "role, index, shape and nesting equal the one the backend allocated.",
        "",
        "| backend | model | target | buffers run | predicted exactly | missed or wrong |",
        "|---|---|---|---|---|---|",
    ]
    commands = []
    for data in load("publictruth"):
        for r in data["targets"]:
            bad = len(r["missed"]) + len(r["wrong"])
            out.append(f"| {data['backend']} {data['backend_version']} | {r['model']} | {r['target']} | {r['real']} "
                       f"| {r['exact']} | {bad} |")
        commands.append(f"- `{data['command']}` on {data['machine']}, Python {data['python']}, {data['date']}")
    return out + ["", "Commands:", ""] + commands + [""]


def table_fixverdict():
    rows = load("fixverdict")
    if not rows:
        return []
    out = [
        "## 11. `fix` verdicts on a busy machine (issue 29, item 16)",
        "",
        "`scanprobe fix --runs 1` of the SP002 (map_scan) and SP003 (per_example_kept) fixtures, repeated beside",
        "CPU-bound processes: scanprobe's verdict (slower only on the clock and in CPU time) and the verdict",
        "the wall-time rule it replaced would have given (1.25x + 10 ms of the fastest run's wall time), from the same runs.",
        "",
        "| backend | busy | fixes | verified | wall rule: failed | a run waited > 5 ms | longest wait (wall / CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in rows:
        s = d["summary"]
        worst = max(d["runs"], key=lambda r: max(r["before_wall_min_s"], r["after_wall_min_s"]))
        side = "before" if worst["before_wall_min_s"] >= worst["after_wall_min_s"] else "after"
        out.append(f"| {d['backend']} {d['backend_version']} | {d['busy']} | {s['fixes']} | {s['verified']} | "
                   f"{s['wall_rule_failed']} | {s['waited_over_5ms']} | {worst[side + '_wall_min_s'] * 1e3:.1f} ms / "
                   f"{worst[side + '_cpu_min_s'] * 1e3:.2f} ms |")
    out += [""] + [f"Command: `{d['command']}` on {d['machine']}, {d['date']}." for d in rows] + [""]
    return out


def main():
    lines = [
        "# Benchmark results",
        "",
        "Regenerate everything: `bash bench/run` (both environments; 639 s on 2 cores when last run); it",
        "writes `bench/results/*.json` (each with its command, machine and versions) and this file.",
        "Ratios are measured side by side in the same run; absolute times drift on shared machines.",
        "",
    ]
    lines += (table_answer() + table_scaling() + table_accuracy() + table_fixes() + table_sp006() + table_sp007() + table_checkpoint() + table_inspect()
              + table_properties() + table_suite() + table_pymc() + table_realmodel() + table_publictruth() + table_fixverdict())
    (HERE / "RESULTS.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
