"""The samples run on Theano or PyTensor, whichever this environment has.

A user's module imports one backend; the samples import it through here so that the same file
serves both test environments. Set SAMPLE_BACKEND=theano|pytensor|aesara to choose when several exist.
"""

import os
import sys
import warnings

_choice = os.environ.get("SAMPLE_BACKEND", "")


def _theano():
    flags = os.environ.get("THEANO_FLAGS", "")
    if "blas.ldflags" not in flags:  # Theano 1.0.5 on a current numpy (as scanprobe does)
        os.environ["THEANO_FLAGS"] = ",".join(f for f in (flags, "blas.ldflags=") if f)
    if sys.version_info >= (3, 11):
        sys.modules.setdefault("theano.scan_module.scan_perform_ext", None)
    import theano
    import theano.tensor

    return theano, theano.tensor


def _pytensor():
    warnings.filterwarnings("ignore", message="Scan return signature will change")
    import pytensor
    import pytensor.tensor

    return pytensor, pytensor.tensor


def _aesara():
    import aesara
    import aesara.tensor

    return aesara, aesara.tensor


if _choice == "pytensor":
    th, T = _pytensor()
elif _choice == "theano":
    th, T = _theano()
elif _choice == "aesara":
    th, T = _aesara()
else:
    try:
        th, T = _theano()
    except ImportError:
        th, T = _pytensor()

BACKEND = th.__name__
floatX = "float32"
