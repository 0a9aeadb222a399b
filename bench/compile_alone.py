"""Baseline: what the user's own script costs: import, build the seed 000 graph, compile it.

Run as a script; prints JSON {"compile_s": ..., "total_s": ...} where compile_s is the
``function(...)`` call alone (optimization and linking) and total_s the whole process so far.
"""

import json
import os
import sys
import time

T0 = time.perf_counter()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample_graphs"))
os.environ.setdefault("SEED000_SIZE", "real")
mode = sys.argv[1] if len(sys.argv) > 1 else "FAST_COMPILE"

from _backend import T, th  # noqa: E402  (sets the flags Theano needs, like scanprobe)
import numpy as np  # noqa: E402

SIZES = {"small": (8, 3, 8, 8), "scaled": (32, 3, 32, 32), "real": (2000, 3, 32, 32)}
B, C, H, W = SIZES[os.environ["SEED000_SIZE"]]
images = th.shared(np.zeros((B, C, H, W), dtype="float32"), name="images")
bias = th.shared(np.zeros((B, C, H, W), dtype="float32"))
pixels = th.shared(np.array([(i, j) for i in range(H) for j in range(W)], dtype="int32"))


def convolve_location(index, input, bias):
    t = T.switch(index[0] - 1 < 0, 0, index[0] - 1)
    l = T.switch(index[1] - 1 < 0, 0, index[1] - 1)
    b = T.switch(index[0] + 1 >= input.shape[2], input.shape[2] - 1, index[0] + 1)
    r = T.switch(index[1] + 1 >= input.shape[3], input.shape[3] - 1, index[1] + 1)
    r_image = (input[:, :, t:b, l:r] - input[:, :, index[0], index[1]][:, :, None, None]) ** 2
    r_delta = (bias[:, :, t:b, l:r] - bias[:, :, index[0], index[1]][:, :, None, None]) ** 2
    return T.sum(r_image * r_delta)


costs = th.scan(fn=convolve_location, sequences=[pixels], non_sequences=[images, bias], n_steps=H * W)[0]
cost = T.sum(costs)
grads = T.grad(cost, [images, bias])
t1 = time.perf_counter()
f = th.function([], [cost] + grads, mode=mode)
t2 = time.perf_counter()
print(json.dumps({"compile_s": t2 - t1, "total_s": t2 - T0}))
