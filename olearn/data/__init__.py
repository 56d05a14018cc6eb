"""Examples in: sources (files, gzip, stdin), the VW text and svmlight parsers, hashing,
ExampleBatch, the parse cache, numeric input (numpy, scipy.sparse, pandas, dicts)."""
