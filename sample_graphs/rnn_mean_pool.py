"""A sentence encoder that mean-pools an RNN's states over time: the history is kept only to be
averaged (SP006).

`encode` is the inference function of a classifier: the hidden state of every token is summed
over the time axis and divided by the length. Nothing else reads the states, yet the scan keeps
all of them (steps + 1 rows of batch x hidden) because the mean reads every row; save-mem cannot
drop them. Carrying the running sum in the step keeps two rows instead (see
rnn_mean_pool_clean.py, or `scanprobe fix`).
"""

import numpy as np

from _backend import T, floatX, th

STEPS, BATCH, N_EMB, N_HID = 2000, 64, 32, 256

x = T.tensor3("x", dtype=floatX)  # (steps, batch, n_emb): embedded tokens
rng = np.random.default_rng(4)
W_in = th.shared((0.1 * rng.standard_normal((N_EMB, N_HID))).astype(floatX), name="W_in")
W_rec = th.shared((0.05 * rng.standard_normal((N_HID, N_HID))).astype(floatX), name="W_rec")
w_cls = th.shared((0.1 * rng.standard_normal((N_HID,))).astype(floatX), name="w_cls")
h0 = T.zeros((x.shape[1], N_HID), dtype=floatX)


def step(x_t, h_prev):
    return T.tanh(T.dot(x_t, W_in) + T.dot(h_prev, W_rec))


hs = th.scan(step, sequences=[x], outputs_info=[h0])[0]
pooled = hs.mean(axis=0)  # (batch, n_hid): every state kept to be averaged
encode = th.function([x], T.nnet.sigmoid(T.dot(pooled, w_cls)) if hasattr(T, "nnet") else T.sigmoid(T.dot(pooled, w_cls)))

SCANPROBE_INPUTS = {"x": (0.1 * rng.standard_normal((STEPS, BATCH, N_EMB))).astype(floatX)}
