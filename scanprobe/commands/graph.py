"""``scanprobe graph``: a picture of one target's optimized graph."""

from __future__ import annotations

from scanprobe.errors import ScanprobeError


def run_graph(spec, output, backend_name=None, mode=None, inputs=(), progress=None, timeout=None) -> dict:
    from scanprobe.commands.inspect import run_inspect
    from scanprobe.report.graph import write

    report = run_inspect(spec, backend_name, mode, tuple(inputs), False, progress, pictures=True, timeout=timeout)
    if len(report.targets) > 1:
        names = ", ".join(t.name for t in report.targets)
        raise ScanprobeError(f"{report.file} has {len(report.targets)} targets",
                             hint=f"pick one: FILE:TARGET with TARGET one of {names}")
    target = report.targets[0]
    pic = report.pictures[target.name]
    write(pic, output)
    return {"output": output, "target": target.name, "nodes": len(pic.nodes), "buffers": pic.buffer_count(),
            "findings": len(report.findings)}
