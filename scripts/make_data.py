"""Generate a synthetic regression dataset in VW text format (optionally gzip).

Each example has ``--features`` numeric features drawn from ``--vocabulary`` names in namespace
``f``; the label is a sparse linear function of them plus noise. Deterministic for a seed.
"""
from __future__ import annotations

import argparse
import gzip
import os

import numpy as np


def generate(path: str, examples: int, features: int, vocabulary: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=vocabulary) * (rng.random(vocabulary) < 0.2)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    opener = gzip.open if path.endswith(".gz") else open
    chunk = 10000
    with opener(path, "wt") as out:
        for start in range(0, examples, chunk):
            n = min(chunk, examples - start)
            names = np.argsort(rng.random((n, vocabulary)), axis=1)[:, :features] + 1
            values = np.round(rng.normal(size=(n, features)), 4)
            labels = (truth[names - 1] * values).sum(axis=1) + rng.normal(scale=0.1, size=n)
            row = "%.4f |f " + " ".join(["%d:%g"] * features)
            cells = np.empty((n, 1 + 2 * features), dtype=object)
            cells[:, 0] = labels
            cells[:, 1::2] = names
            cells[:, 2::2] = values
            out.write("\n".join(row % tuple(r) for r in cells) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="data/synthetic.vw")
    args = parser.parse_args()
    if os.path.exists(args.out):
        return
    generate(args.out, args.examples, args.features, args.vocabulary, args.seed)


if __name__ == "__main__":
    main()
