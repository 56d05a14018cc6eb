"""--audit: each example's features as ``ns^name:index:value:weight@G`` (VW's layout)."""
from __future__ import annotations

import math

import numpy as np

from olearn.data.batch import ExampleBatch
from olearn.data.hashing import CONSTANT_NAMESPACE, DEFAULT_NAMESPACE
from olearn.features.affixes import AFFIX_NAMESPACE
from olearn.features.interactions import expand_example, unseen_features
from olearn.learners.weights import W_G, W_W
from olearn.reductions.marginal import Marginal
from olearn.reductions.marginal_kernels import new_pairs


def _name(text: np.ndarray, start: int, end: int) -> str:
    return bytes(text[start:end]).decode("utf-8", "surrogateescape") if start >= 0 else ""


def _own_name(batch: ExampleBatch, k: int, with_value: bool = True) -> str:
    """Feature ``k``'s name without its namespace: ``name[^value]``."""
    name_s, name_e, sval_s, sval_e, _, _ = batch.audit[k]
    name = _name(batch.text, name_s, name_e)
    if with_value and sval_s >= 0:
        return name + "^" + _name(batch.text, sval_s, sval_e)
    return name


def feature_name(batch: ExampleBatch, k: int, with_value: bool = True) -> str:
    """Printable name of feature ``k`` of a batch parsed with name spans: ``ns^name[^value]``;
    an --ngram gram's is ``ns^name^name...`` of its components, without string values (VW's)."""
    ns = int(batch.namespace[k])
    if ns == CONSTANT_NAMESPACE:
        return "Constant"
    if ns == AFFIX_NAMESPACE:  # its name span is the affix (VW's is ``affix^+2=ab``)
        return "affix^" + _own_name(batch, k, False)
    if k < len(batch.parts) and batch.parts[k, 0] >= 0:
        first, *rest = [int(j) for j in batch.parts[k] if j >= 0]
        return "^".join([feature_name(batch, first, False),
                         *(_own_name(batch, j, False) for j in rest)])
    name = _own_name(batch, k, with_value)
    ns_s, ns_e = batch.audit[k, 4:6]
    if ns_s >= 0:
        return _name(batch.text, ns_s, ns_e) + "^" + name
    if ns != DEFAULT_NAMESPACE:
        return chr(ns) + "^" + name
    return name


def _joined_name(batch: ExampleBatch, components: np.ndarray) -> str:
    """``a^x*b^y`` from the batch positions of an (interaction) feature's components."""
    return "*".join(feature_name(batch, int(k)) for k in components if k >= 0)


class NameCollector:
    """The first name seen for each weight index, interactions included (for --invert_hash).

    A kernel finds each batch's unseen indices; Python runs once per new index, not per feature.
    """

    def __init__(self, config):
        self._seen = np.zeros(1 << config.bit_precision, dtype=np.bool_)
        self._config = config
        self.names: dict[int, str] = {}
        # --marginal's ids: their names (``ns^x*id``), by key
        self._marginal = (None if config.marginal is None
                          else Marginal.flags(config.marginal))
        self._named = np.zeros(1 << config.bit_precision, dtype=np.bool_)
        self.pairs: dict[int, str] = {}

    def add(self, batch: ExampleBatch, terms: np.ndarray) -> None:
        """Names of ``batch``'s features not seen before, interactions (``terms``) included;
        nothing for a batch without names (read from a cache)."""
        if len(batch.audit) < len(batch.index):
            return
        indices, components = unseen_features(
            batch.offsets, batch.index, batch.value, batch.namespace, terms,
            self._config.mask, self._config.permutations, self._seen)
        for j, row in zip(indices.tolist(), components):
            self.names[j] = _joined_name(batch, row)
        if self._marginal is not None:
            keys, sources = new_pairs(batch.offsets, batch.index, batch.value, batch.namespace,
                                      self._marginal, self._named)
            for key, (first, second) in zip(keys.tolist(), sources.tolist()):
                self.pairs[key] = pair_name(batch, first, second)


def pair_name(batch: ExampleBatch, first: int, second: int) -> str:
    """--marginal's name of a pair ``x id`` (VW's ``ns^x*id``; the default namespace's is
    a space)."""
    ns_s, ns_e = batch.audit[first, 4:6]
    ns = _name(batch.text, ns_s, ns_e) if ns_s >= 0 else chr(int(batch.namespace[first]))
    return f"{ns}^{_own_name(batch, first, False)}*{_own_name(batch, second, False)}"


def expanded_features(batch: ExampleBatch, e: int, terms: np.ndarray, config,
                      index: np.ndarray | None = None) -> list[tuple[str, int, float]]:
    """(name, index, value) of example ``e``'s features after interactions (``a^x*b^y``),
    from the batch's feature indices or ``index`` (--oaa's widened ones)."""
    idx, val, src = expand_example(batch.index if index is None else index, batch.value,
                                   batch.namespace,
                                   int(batch.offsets[e]), int(batch.offsets[e + 1]), terms,
                                   config.mask, config.permutations)
    return [(_joined_name(batch, src[i]), int(idx[i]), float(val[i])) for i in range(len(idx))]


def audit_line(batch: ExampleBatch, e: int, weights: np.ndarray, adaptive: bool,
               terms: np.ndarray, config, index: np.ndarray | None = None,
               offset: int = 0) -> str:
    """The TAB-led feature line, sorted by |weight·value| (largest first), before learning;
    with --oaa, of the class ``offset`` (its weights at the widened ``index`` plus it)."""
    entries = []
    for name, j, x in expanded_features(batch, e, terms, config, index):
        j = (j + offset) & config.mask
        w = float(weights[j, W_W])
        text = f"{name}:{j}:{x:g}:{w:g}" + (f"@{float(weights[j, W_G]):g}" if adaptive else "")
        entries.append((-abs(w * x), text))
    entries.sort(key=lambda item: item[0])
    return "".join("\t" + text for _, text in entries)


def printed_examples(batch: ExampleBatch) -> str:
    """--print's lines (VW's print learner): the label, then the importance (and the initial
    prediction) unless 1 (and 0), ``'tag``, then ``| `` and each feature's index, with
    ``:value`` unless 1. For inspection, as --audit: a line of Python per example."""
    lines = []
    for e in range(len(batch)):
        label, weight, initial = (float(x) for x in batch.numbers[e])
        head = ""
        if not math.isnan(label):
            head = f"{label:g} "
            if weight != 1 or initial != 0:
                head += f"{weight:g} " + (f"{initial:g} " if initial != 0 else "")
        start, end = batch.tags[e]
        if end > start:
            head += "'" + _name(batch.text, start, end)
        lo, hi = batch.offsets[e], batch.offsets[e + 1]
        body = "".join(f"{j}" + ("" if x == 1 else f":{x:g}") + " "
                       for j, x in zip(batch.index[lo:hi].tolist(), batch.value[lo:hi].tolist()))
        lines.append(f"{head}| {body}")
    return "\n".join(lines)
