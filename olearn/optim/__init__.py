"""Optimizers: the per-example update rules, as numba kernels over batches."""
