"""Seed 000, clean: the same cost as seed000_pixel_loop.py, written without a per-pixel scan.

The asker's window for pixel (i, j) holds rows {i-1 if i >= 1} and {i if i <= H-2}, and the same
for columns; the centre term is zero. So the cost is a sum over three neighbour offsets of
shifted, masked slices: one vectorized expression whose gradient allocates nothing per step.
"""

import os

import numpy as np

from _backend import T, floatX, th

SIZES = {"small": (8, 3, 8, 8), "scaled": (32, 3, 32, 32), "real": (2000, 3, 32, 32)}
B, C, H, W = SIZES[os.environ.get("SEED000_SIZE", "small")]

rng = np.random.default_rng(0)
images = th.shared(rng.random((B, C, H, W), dtype=np.float32).astype(floatX), name="images")
bias = th.shared(np.zeros((B, C, H, W), dtype=floatX) + np.float32(0.1))


def window(x, di, dj):
    """(neighbour, centre) slices for offset (di, dj) over the pixels whose window holds it."""
    rows_c = slice(1, H) if di == -1 else slice(0, H - 1)
    cols_c = slice(1, W) if dj == -1 else slice(0, W - 1)
    rows_n = slice(rows_c.start + di, rows_c.stop + di)
    cols_n = slice(cols_c.start + dj, cols_c.stop + dj)
    return x[:, :, rows_n, cols_n], x[:, :, rows_c, cols_c]


terms = []
for di, dj in [(-1, -1), (-1, 0), (0, -1)]:
    xn, xc = window(images, di, dj)
    bn, bc = window(bias, di, dj)
    terms.append(T.sum((xn - xc) ** 2 * (bn - bc) ** 2))
cost = terms[0] + terms[1] + terms[2]
g_images, g_bias = T.grad(cost, [images, bias])

cost_and_grads = th.function([], [cost, g_images, g_bias])

if __name__ == "__main__":
    c, gi, gb = cost_and_grads()
    print(f"cost {c:.6f}  |grad images| {np.abs(gi).sum():.6f}  |grad bias| {np.abs(gb).sum():.6f}")
