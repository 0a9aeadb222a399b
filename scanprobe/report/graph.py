"""Graph pictures (pydot / graphviz) of a target's optimized graph, from plain records."""

from __future__ import annotations

import shutil

from scanprobe.analysis.sizes import human_bytes
from scanprobe.errors import ScanprobeError
from scanprobe.records import Verdict

FORMATS = ("svg", "png", "dot")


def to_dot(pic):
    """A pydot graph: scans as clusters holding their inner graphs, buffers labelled with bytes,
    removable full-history buffers (SP001) in red."""
    import pydot

    g = pydot.Dot(graph_type="digraph", rankdir="TB", fontname="Helvetica", label=f"scanprobe: {pic.target}")
    clusters = {}
    for nid, (_, name) in pic.clusters.items():
        c = pydot.Cluster(f"c_{nid}", label=f"scan {name} (inner graph)", style="rounded,dashed", color="#4477aa")
        clusters[nid] = c
    for n in pic.nodes:
        attrs = {"label": n.label, "shape": "box", "fontname": "Helvetica", "fontsize": "10"}
        if n.kind == "input":
            attrs.update(shape="ellipse", color="#888888")
        if n.kind == "scan":
            attrs.update(style="filled", fillcolor="#dde8f5", penwidth="2")
        held = pic.buffers.get(n.id) or []
        if held:
            lines = [n.label]
            for belongs, nbytes, verdict, shape, dtype in held:
                size = human_bytes(nbytes) if nbytes is not None else "symbolic size"
                lines += [belongs, f"({shape}) {dtype}", size]
            attrs["label"] = "\\n".join(lines)
            if any(Verdict(v).droppable for _, _, v, _, _ in held):
                attrs.update(style="filled", fillcolor="#ffcccc", color="#cc0000", penwidth="3", fontcolor="#990000")
            elif n.kind != "scan":
                attrs.update(style="filled", fillcolor="#fff3cc")
        node = pydot.Node(n.id, **attrs)
        (clusters[n.cluster] if n.cluster in clusters else g).add_node(node)
    # a nested scan's cluster inside the cluster of the scan whose step runs it (not beside it,
    # where graphviz drew the two overlapping)
    cluster_of = {n.id: n.cluster for n in pic.nodes}
    for nid, c in clusters.items():
        parent = cluster_of.get(nid, "")
        (clusters[parent] if parent in clusters else g).add_subgraph(c)
    for a, b in pic.edges:
        g.add_edge(pydot.Edge(a, b, color="#666666"))
    return g


def write(pic, path) -> str:
    """Write the picture (``path`` checked by ``files.output_path`` before the module ran),
    atomically."""
    from pathlib import Path

    from scanprobe.report.files import write_atomic

    path = str(path)
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if fmt not in FORMATS:
        raise ScanprobeError(f"cannot tell the picture format of {path!r}", hint="end the output name in .svg, .png or .dot")
    g = to_dot(pic)
    if fmt == "dot":
        write_atomic(Path(path), g.to_string())
        return path
    if shutil.which("dot") is None:
        raise ScanprobeError(
            "graphviz's `dot` program is not installed, so no svg/png can be drawn",
            hint="install graphviz (apt-get install graphviz, brew install graphviz), or write -o graph.dot",
        )
    write_atomic(Path(path), g.create(format=fmt))
    return path
