"""Names in the user's terms for scan buffers: which variable a buffer belongs to (a plan mixin)."""

from __future__ import annotations

import numpy as np

from scanprobe.backends import ops
from scanprobe.walk.util import _is_constant, _shape_source, _strip_to_root


class Naming:
    """What a buffer belongs to, named by the user's step parameters and module names."""

    def _belongs_to(self, rec, role, i, creator, call):
        lv = self.level
        if rec.is_gradient and role == "sit_sot":
            var = _shape_source(self.api, creator) if creator is not None else None
            non_seqs = self.args.outer_in_non_seqs
            if var is None or not any(self.w.session.same_variable(var, ns) or var is ns for ns in non_seqs):
                var = self._non_seq_shaped_like(getattr(self.args, f"outer_in_{role}")[i], role)
            if var is not None:
                display, name = self._name_of_forward_input(var)
                return f"gradient accumulator of {display}", name
            if "&" not in rec.name:
                return f"gradient accumulator #{i} of {rec.name[len('grad_of_'):]}", ""
        if rec.is_gradient and "&" not in rec.name:
            if role == "mit_mot":
                state = self._forward_state(i)
                return f"backward-pass gradient of {state or f'recurrent state #{i}'}", ""
            if role == "nit_sot":
                seq = self._forward_sequence(i)
                return f"gradient w.r.t. sequence {seq or f'#{i}'}", ""
        if role in ("sit_sot", "mit_sot"):
            name = call.state_name(role, i, self.args) if call is not None else ""
            init = None
            outer_in = getattr(self.args, f"outer_in_{role}")[i]
            if outer_in.owner is not None and isinstance(outer_in.owner.op, self.api.IncSubtensor):
                init = _strip_to_root(self.api, outer_in.owner.inputs[1])
            if not name and init is not None and init.owner is None and not _is_constant(self.api, init):
                name = self.w.label_of(init, lv)
                if name.startswith("<"):  # a library's unnamed variable (MRG's random state): no name
                    name = ""
            return (f"recurrent state `{name}`" if name else f"recurrent state #{i}"), name
        if role == "mit_mot":
            return f"multi-tap state #{i}", ""
        name = call.output_name(i) if call is not None and role == "nit_sot" and not rec.is_gradient else ""
        if not name and role == "nit_sot" and not rec.is_gradient:  # the graph's own name (PyMC: `series_logprob`)
            outs = getattr(self.args, "outer_out_nit_sot", None) or []
            name = (getattr(outs[i], "name", None) or "") if i < len(outs) else ""
            if not _is_identifier(name):  # an assertion's message given as the name (pymc-extras)
                name = ""
        return (f"per-step output `{name}`" if name else f"per-step output #{i}"), name

    # ------------------------------------------------- the forward scan of a gradient scan

    def _forward_plan(self):
        """The one forward scan whose outputs this (gradient) scan reads as sequences."""
        found = []
        for v in self.args.outer_in_seqs:
            root = _strip_to_root(self.api, v, through_subtensor=True)
            owner = getattr(root, "owner", None)
            plan = self.w.plans.get(id(owner)) if owner is not None else None
            if plan is not None and plan is not self and plan not in found:
                found.append(plan)
        if not found:  # the rewrites computed on the forward outputs first (1 - h**2): look behind
            found = self._forward_plans_behind(self.args.outer_in_seqs)
        return found[0] if len(found) == 1 else None

    def _forward_plans_behind(self, vars_, limit=400):
        """The forward (non-gradient) scans whose outputs ``vars_`` are computed from."""
        found, seen, stack = [], set(), list(vars_)
        while stack and len(seen) < limit:
            owner = getattr(stack.pop(), "owner", None)
            if owner is None or id(owner) in seen:
                continue
            seen.add(id(owner))
            plan = self.w.plans.get(id(owner))
            if plan is not None:
                if plan is not self and not (plan.info.name or "").startswith("grad_of_") and plan not in found:
                    found.append(plan)
                continue
            if not (ops.is_shape_read(owner.op) or ops.is_shape_i(owner.op)):
                stack.extend(owner.inputs)
        return found if not stack else []

    def _output_phrase(self, role, i) -> str:
        """``recurrent state `h``` / ``per-step output `y``` for this scan's buffer (role, i)."""
        call = getattr(self, "call", None)
        if call is None:
            call = self.w.session.scan_call_at(self._scan_site())
        if role in ("sit_sot", "mit_sot"):
            name = call.state_name(role, i, self.args) if call is not None else ""
            return f"recurrent state `{name}`" if name else f"recurrent state #{i}"
        if role == "nit_sot":
            name = call.output_name(i) if call is not None else ""
            return f"per-step output `{name}`" if name else f"per-step output #{i}"
        return f"{role} #{i}"

    def _scan_output_phrase(self, var) -> str:
        """``recurrent state `h` of `scan_fn``` when ``var`` is an output of a walked scan, else ""."""
        plan = self.w.plans.get(id(var.owner)) if var is not None and var.owner is not None else None
        if plan is not None:
            for role, j, _, outer_out, _ in plan.buffers:
                if outer_out is var:
                    return f"{plan._output_phrase(role, j)} of `{plan.info.name or 'scan_fn'}`"
        return ""

    def _rows(self, var, leading=True):
        dims = [self.level.value(d) for d in self.level.shape(var)]
        return (str(getattr(var.type, "dtype", "")), dims[1:] if leading else dims)

    def _forward_state(self, i) -> str:
        """The forward state whose backward-pass gradient is this scan's mit_mot ``i``: by
        position when both scans have as many (the gradient keeps one mit_mot per forward
        state, in order), else the one state of that shape and dtype; "" when unknown."""
        fwd = self._forward_plan()
        if fwd is None:
            return ""
        states = [(role, j, v) for role in ("mit_sot", "sit_sot")
                  for j, v in enumerate(getattr(fwd.args, f"outer_in_{role}"))
                  if getattr(v.type, "dtype", None) is not None]
        mine = self.args.outer_in_mit_mot
        if len(states) == len(mine) and not fwd.args.outer_in_mit_mot:
            role, j, _ = states[i]
        else:
            want = self._rows(mine[i])
            hits = [(role, j) for role, j, v in states if self._rows(v) == want] if None not in want[1] else []
            if len(hits) != 1:
                return ""
            role, j = hits[0]
        return fwd._output_phrase(role, j)

    def _forward_sequence(self, i) -> str:
        """The forward sequence whose gradient is this scan's nit_sot ``i``: the one of that
        row shape and dtype, or by position when every one is kept; "" when unknown."""
        fwd = self._forward_plan()
        outs = self.args.outer_out_nit_sot
        if fwd is None or i >= len(outs) or outs[i] is None:
            return ""
        seqs = [j for j, v in enumerate(fwd.args.outer_in_seqs) if getattr(v.type, "dtype", None) is not None]
        want = self._rows(outs[i])
        if None in want[1]:
            return ""
        hits = [j for j in seqs if self._rows(fwd.args.outer_in_seqs[j]) == want]
        if len(hits) != 1:  # several of that shape: by position, when every sequence has its gradient
            if len(seqs) != len(outs) or i >= len(seqs) or seqs[i] not in hits:
                return ""
            hits = [seqs[i]]
        j = hits[0]
        label = fwd._user_label(fwd.args.outer_in_seqs[j], "sequence", j, getattr(fwd, "call", None))
        if not label or label.startswith("<"):
            return ""
        return f"`{label}`"

    def _computed_input_label(self, v, root) -> str:
        """An outer input that is neither the user's input nor named: a constant (its values),
        another scan's output (``recurrent state `h` of `scan_fn```), a value computed on a line
        of the user's, or what it is computed from."""
        if root is not None and _is_constant(self.api, root):
            return _constant_text(root)
        phrase = self._scan_output_phrase(root) or self._scan_output_phrase(
            _strip_to_root(self.api, v, through_subtensor=True))  # `hs` of `hs, _ = scan(...)`: h[1:]
        if phrase:
            return phrase
        for var in (v, root):
            site = self.w.session.user_site_from_trace(var) if var is not None and var.owner is not None else None
            if site is not None:
                own = getattr(self, "site", None)
                if (self.info.name or "").startswith("grad_of_") and own is not None and \
                        (site.file, site.line) == (own.file, own.line):
                    # made by the same grad() call as this backward scan: what flows back into it
                    return f"the cost's gradient w.r.t. a forward output ({site.short()})"
                return f"a value computed at {site.short()}"
        sources = self._named_sources(v)
        if sources is None:
            return ""
        return "computed from " + " and ".join(sources) if sources else "a constant expression"

    def _named_sources(self, v, limit=400):
        """What a computed value is made from, in the user's terms: the scans' outputs and the
        named inputs it reads (at most three); [] when it reads only constants; None when there
        are more, unnamed inputs, or the graph is too large to walk."""
        found, seen, stack, unnamed = [], set(), [v], False
        while stack and len(seen) < limit:
            var = stack.pop()
            if id(var) in seen:
                continue
            seen.add(id(var))
            owner = var.owner
            if owner is None:
                if not _is_constant(self.api, var):
                    label = self.w.label_of(var, self.level)
                    if label and not label.startswith("<"):
                        found.append(f"`{label}`")
                    else:
                        unnamed = True
                continue
            if id(owner) in self.w.plans:  # another scan's output: named, not walked into
                phrase = self._scan_output_phrase(var)
                if phrase:
                    found.append(phrase)
                continue
            if ops.is_shape_read(owner.op) or ops.is_shape_i(owner.op):
                continue  # a size, not a value read
            stack.extend(owner.inputs)
        if stack or unnamed:  # not walked to the end, or reads what has no name: say nothing
            return None
        found = list(dict.fromkeys(found))
        return found if len(found) <= 3 else None


    def _weight_of_terms(self, products) -> str:
        """The one graph input (a weight) whose shape and dtype the product of a gradient's
        per-step terms has: ``non_sequence `W```; "" when none or several match."""
        lv = self.level
        if len(products) != 1 or lv.parent is not None:
            return ""
        out = products[0]
        cands = [v for v in lv.fg.inputs if getattr(v.type, "ndim", None) == out.type.ndim
                 and getattr(v.type, "dtype", None) == out.type.dtype and not _is_constant(self.api, v)]
        for v in [out, *cands]:
            for d in lv.shape(v):
                lv.request(d)
        lv.evaluate_pending()
        want = [lv.value(d) for d in lv.shape(out)]
        if not want or not all(isinstance(x, int) for x in want):
            return ""
        hits = [v for v in cands if [lv.value(d) for d in lv.shape(v)] == want]
        if len(hits) != 1:
            return ""
        display, _ = self._name_of_forward_input(hits[0])
        return display if not display.startswith("non_sequence `<") else ""

    def _non_seq_shaped_like(self, outer_in, role):
        """The one non_sequence whose (known) shape and dtype match a gradient buffer's rows.

        Used when the buffer's shape no longer points at its variable (shapes constant-folded);
        when two non_sequences have the same shape the answer stays unknown rather than guessed.
        """
        lv = self.level
        dims = [lv.value(d) for d in lv.shape(outer_in)]
        rows = dims[1:] if role != "untraced" else dims
        def matching(candidates, computed):
            hits = []
            for ns in candidates:
                if getattr(ns.type, "dtype", None) != outer_in.type.dtype:
                    continue
                shp = [lv.value(d) for d in lv.shape(ns)]
                root = _strip_to_root(self.api, ns)
                if _is_constant(self.api, root) or (root.owner is not None and not (
                        computed and self._scan_output_phrase(_strip_to_root(self.api, ns, through_subtensor=True)))):
                    continue  # a computed one only when it is another scan's output (the encoder's states)
                if all(isinstance(x, int) for x in shp) and shp == rows and root not in hits:
                    hits.append(root if root.owner is None else ns)
            return hits

        # the scan's own non_sequences: another scan's output counts (named by it)
        hits = matching(self.args.outer_in_non_seqs, computed=True)
        if not hits and lv.parent is None:
            # the rewrites may have dropped the non_sequence from the backward scan (only its
            # shape was used): look among the function's inputs and shared variables
            inputs = [v for v in lv.fg.inputs if getattr(v.type, "ndim", None) == len(rows)]
            for v in inputs:
                for d in lv.shape(v):
                    lv.request(d)
            lv.evaluate_pending()
            hits = matching(inputs, computed=False)
        return hits[0] if len(hits) == 1 else None

    def _name_of_forward_input(self, var):
        """(display, name) of what a scan step receives as a non_sequence: ``non_sequence `W```.

        The step function's parameter name is what the user reads in the step's code; the
        module-level name is added when it differs (``input`` (``images``)). A computed one is
        said by what computes it (``non_sequence (recurrent state `h` of `scan_fn`)``).
        """
        if var.owner is not None:
            text = self._computed_input_label(var, _strip_to_root(self.api, var))
            return (f"non_sequence ({text})" if text else "a computed non_sequence"), ""
        label = self.w.label_of(var, self.level)
        for call in self.w.session.scan_calls:
            name = call.name_of_non_sequence(self.w.session, var)
            if name:
                if name == label or label.startswith("<"):
                    return f"non_sequence `{name}`", name
                return f"non_sequence `{name}` (`{label}`)", name
        return f"non_sequence `{label}`", label

    # ---------------------------------------------------------------- nesting


def _is_identifier(name: str) -> bool:
    """A name as code spells it (``series_logprob``, ``model.y``), not a sentence."""
    return bool(name) and all(part.isidentifier() for part in name.split("."))


def _constant_text(var) -> str:
    """A constant as a person reads it: its values when few (``[0, 1]``), else its size."""
    data = np.asarray(getattr(var, "data", getattr(var, "value", None)))
    if data.dtype == object:
        return "a constant"
    if data.size <= 6:
        return f"the constant {data.tolist()}"
    return f"a constant {data.dtype} array of {data.size:,} values"
