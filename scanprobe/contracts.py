"""Versions of scanprobe and of its machine-readable outputs (the bottom layer: imports nothing).

Any change of keys in an output bumps its schema; docs/json-schema.md documents each one and
tests/test_contracts.py validates every command's JSON against docs/schemas/.
"""

__version__ = "0.1.0"

#: ``inspect --format json`` and ``check --format json``.
REPORT_SCHEMA = "scanprobe.report/6"
#: ``profile --format json``.
PROFILE_SCHEMA = "scanprobe.profile/6"
#: ``fix --format json``.
FIX_SCHEMA = "scanprobe.fix/7"
