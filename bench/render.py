"""Write bench/RESULTS.md from bench/results/*.json."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    lines = [
        "# Benchmark results",
        "",
        "Regenerate: `bash bench/run` (both environments), which writes `bench/results/*.json` and this file.",
        "",
        "## `scanprobe inspect` on seed 000 at its real size (FAST_COMPILE)",
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
    for path in sorted((HERE / "results").glob("inspect_*.json")):
        data = json.loads(path.read_text())
        r = data["results"]
        lines.append(
            f"| {data['backend']} {data['backend_version']} | {r['inspect_cold_s']:.2f} s | {r['inspect_warm_s']:.2f} s "
            f"| {r['compile_alone_cold_total_s']:.2f} s | {r['compile_alone_warm_total_s']:.2f} s "
            f"| {r['compile_alone_warm_compile_call_s']:.2f} s | {r['ratio_inspect_to_compile_alone_total']:.2f}x "
            f"| {r['inspect_warm_peak_rss_kib'] / 1024:.0f} MiB | {' + '.join(f'{b:,}' for b in r['predicted_bytes'])} |"
        )
        commands.append(f"- {data['backend']}: `{data['command']}` on {data['machine']}, Python {data['python']}, {data['date']}")
    lines += ["", "Commands and machines:", ""] + commands + [""]
    lines += seed002_section()
    (HERE / "RESULTS.md").write_text("\n".join(lines))


def seed002_section():
    out = [
        "## Seed 002: mean of squared per-example gradients, naive scan versus `scanprobe.fix`",
        "",
        "`sample_graphs/seed002_per_example_grads.py` at SEED002_SIZE=medium (64 inputs, 64 hidden,",
        "10 outputs, float64). *naive*: the asker's scan of `grad(cost[i], p) ** 2` over the batch;",
        "*fixed*: the function `scanprobe.fix` returns (sum-of-squares form, one backward pass);",
        "*per-example*: scanprobe's fallback form (each step clones the cost with `x[i:i+1]`, the",
        "answer in the thread); *floor*: one ordinary gradient of the batch's mean cost. Medians of",
        "repeated calls, all forms timed one after the other in the same process for each batch.",
        "Slopes are fitted on log(time) against log(batch): 2 is O(B^2), 1 is O(B).",
        "",
    ]
    for path in sorted((HERE / "results").glob("seed002_*.json")):
        data = json.loads(path.read_text())
        out += [
            f"### {data['backend']} {data['backend_version']}",
            "",
            "| batch | naive | per-example | fixed | floor (one gradient) | naive / fixed | fixed / floor | max relative difference (fixed, per-example) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in data["rows"]:
            out.append(
                f"| {r['batch']} | {r['naive_s'] * 1e3:.2f} ms | {r['per_example_s'] * 1e3:.2f} ms | {r['fixed_s'] * 1e3:.3f} ms "
                f"| {r['floor_s'] * 1e3:.3f} ms | {r['speedup_fixed_vs_naive']:.0f}x | {r['fixed_over_floor']:.2f}x "
                f"| {r['max_rel_diff']['fixed']:.1e}, {r['max_rel_diff']['per_example']:.1e} |"
            )
        sl = data["slopes"]
        out += [
            "",
            f"Fitted slopes: naive {sl['naive']:.2f}, per-example {sl['per_example']:.2f}, fixed {sl['fixed']:.2f}, "
            f"floor {sl['floor']:.2f}.",
            "",
            f"Command: `{data['command']}` on {data['machine']}, Python {data['python']}, numpy {data['numpy']}, {data['date']}.",
            "",
        ]
    return out


if __name__ == "__main__":
    main()
