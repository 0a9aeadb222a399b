"""``--format json`` for every command: the result's versioned contract (docs/json-schema.md),
keys sorted so that diffs of reports stay stable."""

from __future__ import annotations

import json


def render(result, out, color=None) -> None:
    json.dump(result.to_json(), out, indent=2, sort_keys=True, default=str)
    out.write("\n")
