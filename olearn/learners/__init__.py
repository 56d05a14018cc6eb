"""Learner families (family.py: what one is; families.py: their table, a module each;
exponential weights in experts/), losses, the weight table, lazy regularization."""
