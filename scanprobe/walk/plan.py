"""One Scan node turned into records: its buffers, their sizes, what they belong to.

Requests every scalar a scan's records need (n_steps, buffer dims, reader indices, SP003 step
lengths) so that a level evaluates them together, then builds the ``records.Scan``.
"""

from __future__ import annotations

import numpy as np

from scanprobe import records as R
from scanprobe.backends import ops
from scanprobe.backends.graphs import ByIdentity, ancestors
from scanprobe.walk.naming import Naming
from scanprobe.walk.nested_cut import cut_for_nested
from scanprobe.walk.reads import reader_index_vars, reads
from scanprobe.walk.steps import StepFacts
from scanprobe.walk.level import GraphView, Level
from scanprobe.walk.shapes import LazyShapes
from scanprobe.walk.cotangent import zero_fed
from scanprobe.walk.util import (
    own_inputs,
    _creator, _is_constant, _known_from_outer, _shape_source, _short_input, _strip_to_root, _type_str,
)

_ROLES = ("mit_mot", "mit_sot", "sit_sot", "nit_sot", "shared")


class ScanPlan(Naming):
    """Collects what one Scan node needs evaluated, then turns it into records."""

    def __init__(self, level, node):
        self.level = level
        self.w = level.w
        self.b = level.b
        self.api = level.api
        self.node = node
        self.op = node.op
        self.info = self.b.scan_info(self.op)
        self.args = self.b.scan_roles(node)
        self.id = self.w.new_id()
        self.n_steps = node.inputs[0]
        self.buffers = []  # (role, index, outer_in, outer_out, dims_vars)
        self.index_vars = []
        self.products = []  # outputs of the products a gradient's per-step terms feed (reads)
        self.w.plans[id(node)] = self

    def request(self):
        lv = self.level
        lv.request(self.n_steps)
        a = self.args
        for role in _ROLES:
            ins = getattr(a, f"outer_in_{role}")
            outs = getattr(a, f"outer_out_{role}")
            if role == "shared":  # untraced states (PyTensor) / shared updates (Theano)
                role = "untraced"
            for i, outer_in in enumerate(ins):
                outer_out = outs[i] if i < len(outs) else None
                if getattr(outer_in.type, "dtype", None) is None and role != "nit_sot":
                    continue  # a random generator or other non-tensor state: no buffer
                if role == "nit_sot":
                    rest = lv.shape(outer_out)[1:] if outer_out is not None else ()
                    dims = (outer_in,) + tuple(rest)
                else:
                    dims = lv.shape(outer_in)
                    _, creator = _creator(self.api, outer_in)
                    for x in creator.inputs if creator is not None else ():
                        if getattr(x.type, "ndim", None) == 0:
                            lv.request(x)
                for d in dims:
                    lv.request(d)
                self.buffers.append((role, i, outer_in, outer_out, dims))
        # outer sequences and non-sequences: shapes and values known here help nested scans
        for v in list(a.outer_in_seqs) + list(a.outer_in_non_seqs):
            if getattr(v.type, "ndim", None) is not None:
                for d in lv.shape(v):
                    lv.request(d)
                if v.type.ndim == 0:
                    lv.request(v)
        # indices used by readers of each output
        for role, i, outer_in, outer_out, dims in self.buffers:
            if outer_out is not None:
                for var in reader_index_vars(self, outer_out):
                    lv.request(var)
        self.step = StepFacts(self)
        for item in self.step.writes:
            if item["dim"] is not None:
                lv.request(item["dim"])

    def finish(self, plans):
        lv = self.level
        w = self.w
        info = self.info
        n_val = lv.value(self.n_steps)
        site = self._scan_site()
        call = w.session.scan_call_at(site)
        self.call, self.site = call, site
        rec = R.Scan(
            id=self.id,
            name=info.name or "scan_fn",
            op=str(self.op),
            n_steps=R.Dim(n_val if isinstance(n_val, int) else None, lv.formula(self.n_steps)),
            as_while=info.as_while,
            is_gradient=any(p.startswith("grad_of_") for p in (info.name or "").split("&")),
            truncate_gradient=info.truncate_gradient,
            parent=lv.parent,
            site=site,
            step_function=getattr(call, "step_name", "") if call else "",
        )
        rec.inputs = self._outer_inputs(call)
        self.step.fill(rec, n_val)
        if call is not None and not rec.is_gradient and not rec.recurrent and call.declared_states():
            n = call.declared_states()
            rec.rewritten = (
                f"your `scan` call declares {n} recurrent state{'s' if n > 1 else ''} (`outputs_info`), the "
                "compiled scan has none: it was rewritten before it ran (by PyMC, whose log-density of a scan "
                "reads the observed values where your step read its state; or by the optimizer, where the "
                "step never reads its state)")
        nsteps_keys = [(p, lv.split_offset(p.n_steps)) for p in plans]
        for role, i, outer_in, outer_out, dims in self.buffers:
            rec.buffers.append(self._buffer(rec, role, i, outer_in, outer_out, dims, nsteps_keys, call))
        self.record = rec
        w._scans.append(rec)
        w.scan_nodes[rec.id] = self.node
        if lv.parent is None:
            for role, i, outer_in, outer_out, dims in self.buffers:
                var = outer_out if role == "nit_sot" else outer_in
                w.buffer_vars[(rec.id, role, i)] = var

    # ---------------------------------------------------------------- details
    def _scan_site(self):
        for out in self.node.outputs:
            site = self.w.session.user_site_from_trace(out)
            if site is not None:
                return site
        # merged scans, and scans in a frozen inner graph (PyTensor >= 3.1.1), lose their trace:
        # the user's scan call with that name, among those made in the enclosing scan's step
        parts = [p for p in (self.info.name or "scan_fn").split("&") if not p.startswith("grad_of_")]
        calls = [c for c in self.w.session.scan_calls if c is not None]
        parent = self.level.parent_call
        # a top-level scan is made by a call outside any step; a nested one by a call in its
        # enclosing scan's step
        calls = [c for c in calls if c.parent is parent] if (parent is not None or self.level.parent is None) else []
        for part in parts or [(self.info.name or "scan_fn").split("&")[0][len("grad_of_"):]]:
            hits = [c for c in calls if (c.name or "scan_fn") == part]
            if hits and len({(h.site.file, h.site.line) for h in hits}) == 1:
                return hits[0].site
        # a function compiled before scanprobe saw it (``scanprobe.inspect(f)``): a rewritten
        # Scan's outputs have an empty trace, but the state buffers the user's scan call built
        # (its initial values written into an empty buffer) keep theirs: the scan call's line
        # (its initial values written into an empty buffer) keep theirs, or (Theano) the slice
        # of each sequence to the loop's length that scan() makes: the scan call's line
        if not self.info.name or not self.info.name.startswith("grad_of_"):
            made = [outer_in for role, _, outer_in, _, _ in self.buffers if role != "nit_sot"]
            made += [v for v in self.args.outer_in_seqs if v.owner is not None and ops.is_index_read(v.owner.op)]
            for var in made:
                if var is not None and var.owner is not None:
                    site = self.w.session.user_site_from_trace(var)
                    if site is not None:
                        return site
        return None

    def _outer_inputs(self, call):
        a, lv = self.args, self.level
        out = [R.OuterInput("n_steps", 0, lv.formula(self.n_steps), "int")]
        names = {
            "sequence": a.outer_in_seqs,
            "mit_mot": a.outer_in_mit_mot,
            "mit_sot": a.outer_in_mit_sot,
            "sit_sot": a.outer_in_sit_sot,
            "untraced": a.outer_in_shared,
            "nit_sot": a.outer_in_nit_sot,
            "non_sequence": a.outer_in_non_seqs,
        }
        for role, vars_ in names.items():
            for i, v in enumerate(vars_):
                label = self._user_label(v, role, i, call)
                out.append(R.OuterInput(role, i, label, _type_str(v)))
        return out

    def _user_label(self, v, role, i, call) -> str:
        lv = self.level
        if role == "non_sequence" and call is not None:
            name = call.non_sequence_name(self.w.session, v, i, len(self.args.outer_in_non_seqs))
            if name:
                return name
        if role in ("mit_mot", "mit_sot", "sit_sot", "untraced"):
            return "(buffer, below)"
        root = _strip_to_root(self.api, v, through_subtensor=role == "sequence")
        if root is not None and root.owner is None and not _is_constant(self.api, root):
            return self.w.label_of(root, lv)
        if getattr(v, "name", None):
            return v.name
        if getattr(v.type, "ndim", 1) == 0:
            return lv.formula(v)
        return self._computed_input_label(v, root) or f"<{_type_str(v)}>"

    def _buffer(self, rec, role, i, outer_in, outer_out, dims, nsteps_keys, call):
        lv = self.level
        info = self.info
        dtype = str(outer_in.type.dtype) if role != "nit_sot" else str(outer_out.type.dtype)
        itemsize = np.dtype(dtype).itemsize
        n_key = lv.split_offset(self.n_steps)
        names = {}
        if n_key[1] == 0:
            names[n_key[0]] = "n_steps"
        rdims = []
        for j, d in enumerate(dims):
            val = lv.value(d)
            # a known trailing dim reads as its number; the leading one keeps its relation to
            # n_steps (set below when found) so that "(n_steps+1)" stays visible
            formula = str(val) if isinstance(val, int) and j > 0 else lv.formula(d, names)
            if j == 0 and val is None:
                base, k = lv.split_offset(d)
                if base == n_key[0]:
                    off = k - n_key[1]
                    formula = "n_steps" if off == 0 else f"(n_steps{off:+d})"
            rdims.append(R.Dim(val if isinstance(val, int) else None, formula))
        if role == "untraced":  # the state itself, no time axis: nothing to shrink
            _, creator = _creator(self.api, outer_in)
            belongs = f"untraced state #{i} (no history kept)"
            var = _shape_source(self.api, creator, leading=False)
            if rec.is_gradient and (var is None or not any(self.w.session.same_variable(var, ns) or var is ns
                                                           for ns in self.args.outer_in_non_seqs)):
                # the shape's source is not what it accumulates (x.shape[0] sizing hs's gradient)
                var = self._non_seq_shaped_like(outer_in, role)
            if rec.is_gradient and var is not None:
                display, _ = self._name_of_forward_input(var)
                belongs = f"gradient accumulator of {display}, untraced (no history kept)"
            return R.Buffer(
                scan_id=rec.id, role=role, index=i, dtype=dtype, itemsize=itemsize, dims=rdims,
                needed_rows=0, belongs_to=belongs,
                created_by=ops.display_name(outer_in.owner.op) if outer_in.owner else "graph input",
            )
        taps = list(info.taps.get(role, [[]] * (i + 1))[i]) if role != "nit_sot" else [0]
        span = max([-t for t in taps if t < 0] + [0]) if role != "mit_mot" else max(
            [abs(t) for t in taps] + [1]
        )
        buf = R.Buffer(
            scan_id=rec.id,
            role=role,
            index=i,
            dtype=dtype,
            itemsize=itemsize,
            dims=rdims,
            taps=[int(t) for t in taps],
            needed_rows=max(span, 1) + (0 if role == "nit_sot" else 1),
        )
        # leading dimension relative to a scan's n_steps
        lead = dims[0] if dims else None
        if lead is not None:
            lead_val = lv.value(lead)
            base, k = lv.split_offset(lead)
            candidates = [(p, key) for p, key in nsteps_keys if p is self] + [
                (p, key) for p, key in nsteps_keys if p is not self
            ]
            own = lv.value(self.n_steps)
            matches = []
            for p, (nbase, nk) in candidates:
                pval = lv.value(p.n_steps)
                if isinstance(lead_val, int) and isinstance(pval, int):
                    # Own length: any buffer with at least one row per step keeps the history.
                    # Another scan's length (a gradient scan under truncate_gradient sized by
                    # the forward scan): close to it, and longer than this scan runs.
                    off = lead_val - pval
                    if (p is self and off >= 0) or (
                        p is not self and 0 <= off <= buf.needed_rows and isinstance(own, int) and lead_val > own
                    ):
                        matches.append((off, p))
                elif nbase == base and nbase != ("c", 0):
                    matches.append((k - nk, p))
            if not matches and lead_val is None:
                matches = self._probe_matches(lead, buf)
            if matches:
                off, p = min(matches, key=lambda m: (m[0] < 0, abs(m[0]), m[1] is not self))
                buf.leading_offset = off
                buf.length_of = p.info.name or "scan_fn"
                if lead_val is None and p is self:  # say it simply: it equals n_steps + k
                    rdims[0].formula = "n_steps" if off == 0 else f"(n_steps{off:+d})"
        # provenance
        created, creator = _creator(self.api, outer_in) if role != "nit_sot" else (None, None)
        if role == "nit_sot":
            buf.created_by = f"allocated inside the Scan's perform (length {rdims[0].value if rdims[0].value is not None else rdims[0].formula})"
        elif creator is not None:
            buf.created_by = f"{ops.display_name(creator.op)}({', '.join(_short_input(lv, x) for x in creator.inputs)})"
        else:
            buf.created_by = ops.display_name(outer_in.owner.op) if outer_in.owner else "graph input"
        site = None
        for var in ([created] if created is not None else []) + [outer_in, outer_out]:
            if var is not None:
                site = self.w.session.user_site_from_trace(var)
                if site:
                    break
        buf.created_site = site or rec.site
        if role == "mit_mot":
            buf.zero_fed = zero_fed(self.b, outer_in)
        buf.belongs_to, buf.variable = self._belongs_to(rec, role, i, creator, call)
        if outer_out is not None:
            self.products = []
            buf.reads = reads(self, outer_out, buf, dims[0] if dims else None, gradient=rec.is_gradient)
            if rec.is_gradient and role == "nit_sot" and buf.reads and all(r.kind == "product" for r in buf.reads):
                # not a sequence's gradient: a pushed-out product's, named by the weight it sums to
                weight = self._weight_of_terms(self.products)
                buf.belongs_to = f"per-step gradient terms of {weight}" if weight else f"per-step gradient terms #{i}"
        return buf

    def _probe_matches(self, lead, buf):
        """(k, scan) pairs for which lead == n_steps + k under two made-up input sizes."""
        lv = self.level
        own = [self.n_steps]
        (a, b) = lv.probe([lead] + own)
        la, lb, na, nb = a.get(lead), b.get(lead), a.get(self.n_steps), b.get(self.n_steps)
        if not all(isinstance(x, int) for x in (la, lb, na, nb)) or na == nb:
            return []
        if la - na == lb - nb and la - na >= 0:
            return [(la - na, self)]
        return []

    def walk_inner(self):
        """Analyse scans nested in this scan's inner graph, with what the outer level knows."""
        if not any(n.owner is not None and self.b.is_scan(n.owner) for n in ancestors(self.info.inner_outputs)):
            return
        # the inner graph the scan runs: optimized in the scan op's own mode (the outer mode is not
        # the inner one: a FAST_COMPILE function's nested scans still get save-mem inside)
        leaves = ByIdentity()
        cut = cut_for_nested(self.b, *self.b.inner_graph(self.node))
        optimized = self.b.optimize_like_inner(self.node, cut.inputs, cut.outputs) if cut is not None else None
        if optimized is not None:  # a large step: only what decides the nested scans' buffers
            inner_in, inner_out = optimized
            own = dict(zip(cut.inputs, inner_in))
            for j, dims in enumerate(cut.fresh_dims):
                if dims is not None:
                    new = [self.api.clone_replace(d, replace=own) if d.owner is not None else d for d in dims]
                    leaves[inner_in[cut.n_own + j]] = tuple(new)
            inner_in = inner_in[: cut.n_own]
        else:
            inner_in, inner_out = self.b.run_inner_graph(self.node)
        inner_in, inner_out, leaves = own_inputs(self.api, inner_in, inner_out, leaves)
        fg = GraphView(inner_in + [v for v in leaves], inner_out)
        known = ByIdentity()
        lv = self.level
        a = self.args
        # Map inner inputs to what we know of the outer ones, by position: inner inputs are
        # sequences first (one per outer sequence slice) and non_sequences last, in the same
        # order as the outer ones. (Theano's scan_args clones the inner graph, so identity
        # cannot be used.)
        n_ns = len(a.outer_in_non_seqs)
        seq_pairs = list(zip(a.outer_in_seqs, inner_in[: len(a.outer_in_seqs)]))
        ns_pairs = list(zip(a.outer_in_non_seqs, inner_in[len(inner_in) - n_ns :] if n_ns else []))
        for outer, inner in ns_pairs:
            known[inner] = _known_from_outer(lv, outer, drop_first=False)
        for outer, inner in seq_pairs:
            known[inner] = _known_from_outer(lv, outer, drop_first=True)
        # then the states' taps (mit_mot, mit_sot, sit_sot): a row of the outer buffer each
        pos = len(a.outer_in_seqs)
        groups = [(b, len(t)) for b, t in zip(a.outer_in_mit_mot, a.mit_mot_in_slices)]
        groups += [(b, len(t)) for b, t in zip(a.outer_in_mit_sot, a.mit_sot_in_slices)]
        groups += [(b, 1) for b in a.outer_in_sit_sot]
        for outer, n_taps in groups:
            row = _known_from_outer(lv, outer, drop_first=True)
            for inner in inner_in[pos: pos + n_taps]:
                known[inner] = row
            pos += n_taps
        labels = ByIdentity()
        for outer, inner in ns_pairs:
            labels[inner] = self._user_label(outer, "non_sequence", 0, None)
        for outer, inner in seq_pairs:
            labels[inner] = f"{self._user_label(outer, 'sequence', 0, None)}[t]"
        fg_known, fg_labels = ByIdentity(), ByIdentity()  # PyTensor's inner inputs of two levels compare equal
        for orig in inner_in:
            fg_known[orig] = known.get(orig, (None, None, "unknown"))
            if orig in labels:
                fg_labels[orig] = labels[orig]
        for v in leaves:
            fg_known[v] = (None, None, "unknown")  # sized by its shape over the step's inputs
        sub = Level(self.w, fg, LazyShapes(self.b, leaves=leaves), fg_known, parent=self.id, labels=fg_labels)
        sub.parent_call = self.w.session.scan_call_at(self.record.site)
        sub.walk()


