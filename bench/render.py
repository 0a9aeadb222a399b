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
    (HERE / "RESULTS.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
