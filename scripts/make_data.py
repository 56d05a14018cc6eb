"""Generate a synthetic regression dataset in VW text format (optionally gzip).

Each example has ``--features`` numeric features drawn from ``--vocabulary`` names in namespace
``f``; the label is a sparse linear function of them plus noise. Deterministic for a seed.
With ``--namespaces K``, each example has ``--features`` features in each of K namespaces
``a``, ``b``, ... instead (for interactions of several shapes: ``-q ab``, ``--cubic abc``).
"""
from __future__ import annotations

import argparse
import gzip
import os

import numpy as np


def generate(path: str, examples: int, features: int, vocabulary: int, seed: int,
             namespaces: int = 0) -> None:
    """Write the examples to ``path``: namespace ``f`` alone, or ``namespaces`` > 0 of them."""
    if namespaces:
        generate_namespaces(path, examples, features, vocabulary, seed, namespaces)
        return
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


def generate_namespaces(path: str, examples: int, features: int, vocabulary: int, seed: int,
                        namespaces: int) -> None:
    """``features`` features in each of ``namespaces`` namespaces a, b, ..., the label a sparse
    linear function of all of them plus noise."""
    rng = np.random.default_rng(seed)
    shape = (namespaces, vocabulary)
    truth = rng.normal(size=shape) * (rng.random(shape) < 0.2)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    opener = gzip.open if path.endswith(".gz") else open
    letters = "abcdefghijklmnopqrstuvwxyz"[:namespaces]
    row = "%.4f " + " ".join(f"|{ns} " + " ".join(["%d:%g"] * features) for ns in letters)
    chunk = 2000
    with opener(path, "wt") as out:
        for start in range(0, examples, chunk):
            n = min(chunk, examples - start)
            cells = np.empty((n, 1 + 2 * features * namespaces), dtype=object)
            labels = rng.normal(scale=0.1, size=n)
            for k in range(namespaces):
                names = np.argsort(rng.random((n, vocabulary)), axis=1)[:, :features] + 1
                values = np.round(rng.normal(size=(n, features)), 4)
                labels += (truth[k, names - 1] * values).sum(axis=1)
                first = 1 + 2 * features * k
                cells[:, first:first + 2 * features:2] = names
                cells[:, first + 1:first + 2 * features:2] = values
            cells[:, 0] = labels
            out.write("\n".join(row % tuple(r) for r in cells) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--namespaces", type=int, default=0,
                        help="this many namespaces a, b, ..., each with --features features "
                             "(default: namespace f alone)")
    parser.add_argument("--out", default="data/synthetic.vw")
    args = parser.parse_args()
    if os.path.exists(args.out):
        return
    generate(args.out, args.examples, args.features, args.vocabulary, args.seed,
             args.namespaces)


if __name__ == "__main__":
    main()
