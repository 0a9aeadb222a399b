"""A two-layer perceptron with no scan at all: scanprobe has nothing to report."""

import numpy as np

from _backend import T, floatX, th

rng = np.random.default_rng(2)
x = T.matrix("x", dtype=floatX)
t = T.vector("t", dtype=floatX)
W1 = th.shared((0.1 * rng.standard_normal((64, 128))).astype(floatX), name="W1")
W2 = th.shared((0.1 * rng.standard_normal((128,))).astype(floatX), name="W2")
p = 1 / (1 + T.exp(-T.dot(T.tanh(T.dot(x, W1)), W2)))
cost = T.mean((p - t) ** 2)
g1, g2 = T.grad(cost, [W1, W2])
lr = np.asarray(0.1, dtype=floatX)
train = th.function([x, t], cost, updates=[(W1, W1 - lr * g1), (W2, W2 - lr * g2)])

if __name__ == "__main__":
    xs = rng.standard_normal((32, 64)).astype(floatX)
    print(train(xs, (xs[:, 0] > 0).astype(floatX)))
