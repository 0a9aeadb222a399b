"""``scanprobe graph``: a picture of one target's optimized graph."""

from __future__ import annotations

from scanprobe.errors import ScanprobeError


def run_graph(spec, output, backend_name=None, mode=None, inputs=(), progress=None) -> dict:
    from scanprobe.commands.inspect import run_inspect
    from scanprobe.report.graph import write

    keep: list = []
    report = run_inspect(spec, backend_name, mode, tuple(inputs), False, progress, keep)
    if len(keep) > 1:
        names = ", ".join(t.name for _, _, _, t in keep)
        raise ScanprobeError(f"{report.file} has {len(keep)} targets", hint=f"pick one: FILE:TARGET with TARGET one of {names}")
    session, cap, built, target = keep[0]
    pic = session.backend.picture(built, target, report.verdicts[target.name])
    write(pic, output)
    return {"output": output, "target": target.name, "nodes": len(pic.nodes), "buffers": len(pic.buffers),
            "findings": len(report.findings)}
