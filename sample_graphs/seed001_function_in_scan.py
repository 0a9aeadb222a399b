"""Seed 001: a compiled function called inside a scan step. Running it raises a TypeError that
says nothing useful; `scanprobe inspect` explains it (SP004) and writes the fix with these names.
The fixed version is seed001_fixed.py."""

import numpy as np

from _backend import T, th

x = th.shared(np.asarray([7.1, 2.2, 3.4], dtype="float32"), name="x")
xin = T.vector("xin", dtype="float32")
index = T.lscalar("index")
test_fn = th.function(inputs=[index], outputs=T.sum(xin ** 2), givens={xin: x[index:index + 1]})


def step(curr):
    return T.constant(test_fn(curr))


outs = th.scan(step, sequences=[T.arange(2)])[0]
out_fn = th.function(inputs=[], outputs=outs)

if __name__ == "__main__":
    print(out_fn())
