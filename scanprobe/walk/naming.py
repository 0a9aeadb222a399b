"""Names in the user's terms for scan buffers: which variable a buffer belongs to (a plan mixin)."""

from __future__ import annotations

from scanprobe.walk.util import _is_constant, _shape_source, _strip_to_root


class Naming:
    """What a buffer belongs to, named by the user's step parameters and module names."""

    def _belongs_to(self, rec, role, i, creator, call):
        lv = self.level
        if rec.is_gradient and role == "sit_sot":
            var = _shape_source(self.api, creator) if creator is not None else None
            non_seqs = self.args.outer_in_non_seqs
            if var is None or not any(self.w.session.same_variable(var, ns) or var is ns for ns in non_seqs):
                var = self._non_seq_shaped_like(outer_in_dims=getattr(self, "_dims_values", None), role=role, i=i)
            if var is not None:
                display, name = self._name_of_forward_input(var)
                return f"gradient accumulator of non_sequence {display}", name
            if "&" not in rec.name:
                return f"gradient accumulator #{i} of {rec.name[len('grad_of_'):]}", ""
        if rec.is_gradient and "&" not in rec.name:
            if role == "mit_mot":
                return f"backward-pass gradient of recurrent state #{i}", ""
            if role == "nit_sot":
                return f"gradient w.r.t. sequence #{i}", ""
        if role in ("sit_sot", "mit_sot"):
            name = call.state_name(role, i, self.args) if call is not None else ""
            init = None
            outer_in = getattr(self.args, f"outer_in_{role}")[i]
            if outer_in.owner is not None and isinstance(outer_in.owner.op, self.api.IncSubtensor):
                init = _strip_to_root(self.api, outer_in.owner.inputs[1])
            if not name and init is not None and init.owner is None and not _is_constant(self.api, init):
                name = self.w.label_of(init, lv)
            return (f"recurrent state `{name}`" if name else f"recurrent state #{i}"), name
        if role == "mit_mot":
            return f"multi-tap state #{i}", ""
        name = call.output_name(i) if call is not None and role == "nit_sot" and not rec.is_gradient else ""
        if not name and role == "nit_sot" and not rec.is_gradient:  # the graph's own name (PyMC: `series_logprob`)
            outs = getattr(self.args, "outer_out_nit_sot", None) or []
            name = (getattr(outs[i], "name", None) or "") if i < len(outs) else ""
        return (f"per-step output `{name}`" if name else f"per-step output #{i}"), name

    def _non_seq_shaped_like(self, outer_in_dims, role, i):
        """The one non_sequence whose (known) shape and dtype match a gradient buffer's rows.

        Used when the buffer's shape no longer points at its variable (shapes constant-folded);
        when two non_sequences have the same shape the answer stays unknown rather than guessed.
        """
        lv = self.level
        outer_in = getattr(self.args, f"outer_in_{role}")[i]
        dims = [lv.value(d) for d in lv.shape(outer_in)]
        rows = dims[1:] if role != "untraced" else dims
        def matching(candidates):
            hits = []
            for ns in candidates:
                if getattr(ns.type, "dtype", None) != outer_in.type.dtype:
                    continue
                shp = [lv.value(d) for d in lv.shape(ns)]
                root = _strip_to_root(self.api, ns)
                if root.owner is not None or _is_constant(self.api, root):
                    continue
                if all(isinstance(x, int) for x in shp) and shp == rows and root not in hits:
                    hits.append(root)
            return hits

        hits = matching(self.args.outer_in_non_seqs)
        if not hits and lv.parent is None:
            # the rewrites may have dropped the non_sequence from the backward scan (only its
            # shape was used): look among the function's inputs and shared variables
            inputs = [v for v in lv.fg.inputs if getattr(v.type, "ndim", None) == len(rows)]
            for v in inputs:
                for d in lv.shape(v):
                    lv.request(d)
            lv.evaluate_pending()
            hits = matching(inputs)
        if len(hits) == 1 and hits[0].owner is None:
            return hits[0]
        return None

    def _name_of_forward_input(self, var):
        """(display, name) of a graph input that a scan step receives as a non_sequence.

        The step function's parameter name is what the user reads in the step's code; the
        module-level name is added when it differs (``input`` (``images``)).
        """
        label = self.w.label_of(var, self.level)
        for call in self.w.session.scan_calls:
            name = call.name_of_non_sequence(self.w.session, var)
            if name:
                if name == label or label.startswith("<"):
                    return f"`{name}`", name
                return f"`{name}` (`{label}`)", name
        return f"`{label}`", label

    # ---------------------------------------------------------------- nesting
