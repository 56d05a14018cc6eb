"""Learner families (gradient descent; exponential weights in experts/), losses, the weight table,
lazy regularization."""
