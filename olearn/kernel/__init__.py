"""The example loop that runs the stack over a batch in numba, its declared state, the Python
API's kept calls and the ahead-of-time build."""
