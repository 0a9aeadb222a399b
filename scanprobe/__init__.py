"""scanprobe: find and explain oversized scan buffers in Theano-family graphs."""

__version__ = "0.1.0"

#: Version of the machine-readable report (``--format json``). Bump on any key change.
REPORT_SCHEMA = "scanprobe.report/1"
