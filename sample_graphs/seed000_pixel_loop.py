"""Seed 000: a per-pixel loop written as scan; its gradient keeps n_steps+1 copies of the images.

A custom "convolution" visits every pixel with scan and compares it with its neighbours, in the
images and in a learned bias of the same shape. The step reads both through non_sequences, so the
backward scan accumulates the gradient of each in a buffer of (n_steps + 1) x image shape. At the
real size (SEED000_SIZE=real: 2000 images of 3x32x32, 1024 steps) that is
Alloc(0.0, 1025, 2000, 3, 32, 32): 25.2 GB per non_sequence, 50.4 GB in all, unless the save-mem
rewrite runs (FAST_RUN does; FAST_COMPILE does not).

The asker's Theano of 2016 did not shrink these buffers even in FAST_RUN (fixed since); the
sample compiles in FAST_COMPILE to reproduce what they saw (SEED000_MODE=FAST_RUN, or
`scanprobe inspect --mode FAST_RUN`, shows the fixed behaviour).

Sizes: SEED000_SIZE=small (default: 8 images, 8x8), medium (16x16), scaled (32 images, 32x32),
real; SEED000_BATCH overrides the number of images.
"""

import os

import numpy as np

from _backend import T, floatX, th

SIZES = {"small": (8, 3, 8, 8), "medium": (8, 3, 16, 16), "scaled": (32, 3, 32, 32), "real": (2000, 3, 32, 32)}
B, C, H, W = SIZES[os.environ.get("SEED000_SIZE", "small")]
B = int(os.environ.get("SEED000_BATCH", B))

rng = np.random.default_rng(0)
images = th.shared(rng.random((B, C, H, W), dtype=np.float32).astype(floatX), name="images")
bias = th.shared(np.zeros((B, C, H, W), dtype=floatX) + np.float32(0.1))
pixels = th.shared(np.array([(i, j) for i in range(H) for j in range(W)], dtype="int32"))


def convolve_location(index, input, bias):
    # the asker's window: rows max(i-1, 0) .. min(i+1, H-1) (exclusive), same for columns
    t = T.switch(index[0] - 1 < 0, 0, index[0] - 1)
    l = T.switch(index[1] - 1 < 0, 0, index[1] - 1)
    b = T.switch(index[0] + 1 >= input.shape[2], input.shape[2] - 1, index[0] + 1)
    r = T.switch(index[1] + 1 >= input.shape[3], input.shape[3] - 1, index[1] + 1)
    r_image = (input[:, :, t:b, l:r] - input[:, :, index[0], index[1]][:, :, None, None]) ** 2
    r_delta = (bias[:, :, t:b, l:r] - bias[:, :, index[0], index[1]][:, :, None, None]) ** 2
    return T.sum(r_image * r_delta)


pixel_costs = th.scan(
    fn=convolve_location,
    outputs_info=None,
    sequences=[pixels],
    non_sequences=[images, bias],
    n_steps=H * W,
)[0]
cost = T.sum(pixel_costs)
g_images, g_bias = T.grad(cost, [images, bias])

cost_and_grads = th.function([], [cost, g_images, g_bias], mode=os.environ.get("SEED000_MODE", "FAST_COMPILE"))

if __name__ == "__main__":
    c, gi, gb = cost_and_grads()
    print(f"cost {c:.6f}  |grad images| {np.abs(gi).sum():.6f}  |grad bias| {np.abs(gb).sum():.6f}")
