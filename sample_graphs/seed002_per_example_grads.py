"""Seed 002: the mean of squared per-example gradients, written as a scan over the batch.

A small network gives one cost per example; the asker wants, for each parameter, the mean over the
batch of the squared gradient of each example's cost. The natural code scans over the batch index
and takes ``grad(cost[i], p) ** 2`` in the step. Each step differentiates ``cost[i]`` through the
graph of the whole batch: the seed of the backward pass is a one-hot vector as long as the batch,
and every step redoes the backward pass of all B examples. The work is O(B^2) instead of O(B).

Sizes: SEED002_BATCH (default 64; the compiled function takes any batch), SEED002_SIZE=small
(16 inputs, 32 hidden, 4 outputs, default), medium (64, 64, 10: the benchmark's) or real
(784 inputs, 256 hidden, 10 outputs). float64, as the asker's comparisons are.
"""

import os

import numpy as np

from _backend import BACKEND, T, th  # noqa: F401 - BACKEND for the benchmark

SIZES = {"small": (16, 32, 4), "medium": (64, 64, 10), "real": (784, 256, 10)}
D, H, K = SIZES[os.environ.get("SEED002_SIZE", "small")]
B = int(os.environ.get("SEED002_BATCH", "64"))

rng = np.random.default_rng(2)
W1 = th.shared(rng.normal(0, 0.3, (D, H)), name="W1")
b1 = th.shared(np.zeros(H), name="b1")
W2 = th.shared(rng.normal(0, 0.3, (H, K)), name="W2")
b2 = th.shared(np.zeros(K), name="b2")
params = [W1, b1, W2, b2]

x = T.matrix("x", dtype="float64")
y = T.matrix("y", dtype="float64")
hidden = T.tanh(T.dot(x, W1) + b1)
out = T.dot(hidden, W2) + b2
cost = T.sum((out - y) ** 2, axis=1)  # one cost per example


def squared_grads(i):
    return [T.grad(cost[i], p) ** 2 for p in params]


sq = th.scan(squared_grads, sequences=[T.arange(cost.shape[0])])[0]
g_square = [s.mean(axis=0) for s in sq]
mean_sq_grads = th.function([x, y], g_square)

# what scanprobe feeds the function when it runs it (profile, fix)
SCANPROBE_INPUTS = {
    "x": rng.normal(size=(B, D)),
    "y": rng.normal(size=(B, K)),
}

if __name__ == "__main__":
    for p, g in zip(params, mean_sq_grads(SCANPROBE_INPUTS["x"], SCANPROBE_INPUTS["y"])):
        print(p.name, g.shape, float(g.sum()))
