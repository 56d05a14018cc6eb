"""olearn: a fast Vowpal-Wabbit-style online learner on numpy and numba."""

__version__ = "0.1.0"
