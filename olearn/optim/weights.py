"""The weight table: one float32 row per feature index (2^b rows), its columns declared once.

Gradient descent uses every column; the exponential-weights learners export their θ into W
(olearn/optim/saew.py), and the lazy regularization (optim/regularize.py) moves W only.
"""
from olearn.fields import Field, Layout

COLUMNS = Layout(
    "weights",
    Field("w", "the weight", merge="gradient"),
    Field("G", "sum of squared gradients (--adaptive; starts at initial_t)", merge="gradient"),
    Field("N", "largest |x| seen (--normalized)", merge="max"),
    # VW's: a feature repeated in an example uses the last rate computed for it
    Field("rate", "scratch: the current update's rate", merge="mean", saved=False),
)
W_W, W_G, W_N, W_RATE = COLUMNS.indices("w", "G", "N", "rate")
WIDTH = len(COLUMNS)
COLUMNS.check_constants(globals(), "W_")
