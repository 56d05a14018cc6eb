"""The online learner (state, parsing on two threads, the kernel calls) and the pass driver
(passes, holdout, early stopping)."""
