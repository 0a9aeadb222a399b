"""Seed 002, clean: the mean of squared per-example gradients from one backward pass.

The same network and cost as seed002_per_example_grads.py. Each example's gradient of
`dot(A, W)` is the outer product of its row of A and its row of D = d cost.sum() / d dot(A, W),
so the sum over the batch of the squared gradients is dot((A*A).T, D*D); for a bias added to
each row it is (D*D).sum(0). One backward pass of the batch, O(B) (what the asker proposed and
what `scanprobe fix` writes for the naive version).
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
z1 = T.dot(x, W1) + b1
hidden = T.tanh(z1)
z2 = T.dot(hidden, W2) + b2
cost = T.sum((z2 - y) ** 2, axis=1)  # one cost per example

d1, d2 = T.grad(cost.sum(), [z1, z2])  # one backward pass: row b belongs to example b
n = T.cast(x.shape[0], "float64")
g_square = [
    T.dot((x ** 2).T, d1 ** 2) / n,
    (d1 ** 2).sum(axis=0) / n,
    T.dot((hidden ** 2).T, d2 ** 2) / n,
    (d2 ** 2).sum(axis=0) / n,
]
mean_sq_grads = th.function([x, y], g_square)

SCANPROBE_INPUTS = {
    "x": rng.normal(size=(B, D)),
    "y": rng.normal(size=(B, K)),
}

if __name__ == "__main__":
    for p, g in zip(params, mean_sq_grads(SCANPROBE_INPUTS["x"], SCANPROBE_INPUTS["y"])):
        print(p.name, g.shape, float(g.sum()))
