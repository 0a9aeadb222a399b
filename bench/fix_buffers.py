"""The scan buffers of a target before and after `scanprobe fix --max-buffer`, as a markdown table
(predicted from the optimized graphs, nothing run): the README's worked example.

Usage (inside one backend's environment): python bench/fix_buffers.py FILE SIZE
"""

import os
import sys
from pathlib import Path


def rows(target):
    out = []
    for s in target.scans:
        for b in s.buffers:
            shape = " x ".join(str(d.value) for d in b.dims) if b.shape is not None else b.shape_formula()
            scan = s.name if s.parent is None else f"{s.name} (in {next(p.name for p in target.scans if p.id == s.parent)})"
            out.append((scan, b.belongs_to, shape, b.bytes or 0))
    return out


def main():
    from scanprobe.analysis.sizes import human_bytes, parse_bytes
    from scanprobe.fixes.pipeline import findings_of, fixed_build, plan, site_of
    from scanprobe.pipeline import analyse_module, knowledge_of
    from scanprobe.settings import Settings

    path, budget = Path(sys.argv[1]).resolve(), parse_bytes(sys.argv[2])
    os.chdir(path.parent)
    live = analyse_module(str(path)).live[0]
    settings = Settings(max_buffer=budget)
    fix_plan = plan(live.backend, live.captured, live.target, findings_of(live.target, settings),
                    site_of(live.session), settings, live.session.pullbacks)
    _, _, fixed = fixed_build(live.backend, live.session, live.captured, live.built, fix_plan,
                              knowledge_of(live.session, []))
    print(f"fixes: {', '.join(f'{r.rule} {r.form}' for r in fix_plan.applied)}\n")
    for title, target in (("before", live.target), ("after", fixed)):
        table = rows(target)
        print(f"| {title}: scan | buffer | shape | bytes |\n|---|---|---|---|")
        for scan, what, shape, size in table:
            print(f"| `{scan}` | {what} | {shape} | {human_bytes(size)} |")
        total = sum(r[3] for r in table)
        print(f"| | **all scan buffers** | | **{human_bytes(total)}** (largest {human_bytes(max(r[3] for r in table))}) |\n")


if __name__ == "__main__":
    main()
