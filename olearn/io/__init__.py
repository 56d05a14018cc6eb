"""Input: byte sources, the VW text and svmlight parsers, and the batches they produce."""
