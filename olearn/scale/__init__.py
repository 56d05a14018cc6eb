"""Data-parallel training on Dask."""
