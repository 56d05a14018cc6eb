"""Generate a synthetic regression dataset in VW text format (optionally gzip).

Each example has ``--features`` numeric features drawn from ``--vocabulary`` names in namespace
``f``; the label is a sparse linear function of them plus noise. Deterministic for a seed.
With ``--namespaces K``, each example has ``--features`` features in each of K namespaces
``a``, ``b``, ... instead (for interactions of several shapes: ``-q ab``, ``--cubic abc``).
With ``--classes K``, the label is instead the class (1..K) whose sparse linear score is highest,
written as ``--labels`` says: ``class`` (``--oaa``), ``binary`` (K = 2, labels -1/1),
``costs`` (``--csoaa``: ``k:cost`` for every class, 0 for the best), ``lists``
(``--multilabel_oaa``: the classes within a margin of the best) or ``actions`` (``--csoaa_ldf``
and ``--wap_ldf``: K lines per example, one per class, each with the example's features named
for its class, and a blank line after them).
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


LABELS = ("class", "binary", "costs", "lists", "actions")


def generate_classes(path: str, examples: int, features: int, vocabulary: int, seed: int,
                     classes: int, labels: str) -> None:
    """A multiclass problem (see the module's docstring) written as ``labels`` says."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(classes, vocabulary)) * (rng.random((classes, vocabulary)) < 0.2)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    opener = gzip.open if path.endswith(".gz") else open
    chunk = 5000
    with opener(path, "wt") as out:
        for start in range(0, examples, chunk):
            n = min(chunk, examples - start)
            names = np.argsort(rng.random((n, vocabulary)), axis=1)[:, :features] + 1
            values = np.round(rng.normal(size=(n, features)), 4)
            scores = np.einsum("nf,knf->nk", values, truth[:, names - 1])
            scores += rng.normal(scale=0.1, size=scores.shape)
            best = scores.argmax(axis=1)
            out.write("".join(_example(labels, names[i], values[i], scores[i], best[i])
                              for i in range(n)))


def _example(labels: str, names: np.ndarray, values: np.ndarray, scores: np.ndarray,
             best: int) -> str:
    """One example's line(s) in the ``labels`` form."""
    pairs = " ".join(f"{a}:{v:g}" for a, v in zip(names, values))
    if labels == "class":
        return f"{best + 1} |f {pairs}\n"
    if labels == "binary":
        return f"{2 * best - 1} |f {pairs}\n"
    if labels == "costs":
        costs = " ".join(f"{k + 1}:{scores[best] - s:.3f}" for k, s in enumerate(scores))
        return f"{costs} |f {pairs}\n"
    if labels == "lists":
        near = np.flatnonzero(scores >= scores[best] - 0.5)
        return ",".join(str(k) for k in near) + f" |f {pairs}\n"
    lines = []
    for k, s in enumerate(scores):
        named = " ".join(f"{k}_{a}:{v:g}" for a, v in zip(names, values))
        lines.append(f"{k + 1}:{scores[best] - s:.3f} |f {named}\n")
    return "".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--namespaces", type=int, default=0,
                        help="this many namespaces a, b, ..., each with --features features "
                             "(default: namespace f alone)")
    parser.add_argument("--classes", type=int, default=0,
                        help="a multiclass problem of this many classes (default: regression)")
    parser.add_argument("--labels", choices=LABELS, default="class",
                        help="how --classes' labels are written (default: class)")
    parser.add_argument("--out", default="data/synthetic.vw")
    args = parser.parse_args()
    if os.path.exists(args.out):
        return
    if args.classes:
        generate_classes(args.out, args.examples, args.features, args.vocabulary, args.seed,
                         args.classes, args.labels)
        return
    generate(args.out, args.examples, args.features, args.vocabulary, args.seed,
             args.namespaces)


if __name__ == "__main__":
    main()
