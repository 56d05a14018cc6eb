"""--audit: each example's features as ``ns^name:index:value:weight@G`` (VW's layout)."""
from __future__ import annotations

import numpy as np

from olearn.batch import ExampleBatch
from olearn.hashing import CONSTANT_NAMESPACE, DEFAULT_NAMESPACE


def _name(text: np.ndarray, start: int, end: int) -> str:
    return bytes(text[start:end]).decode("utf-8", "surrogateescape") if start >= 0 else ""


def feature_names(batch: ExampleBatch, e: int) -> list[str]:
    """Printable names of example ``e``'s features, in order."""
    names = []
    for k in range(batch.offsets[e], batch.offsets[e + 1]):
        ns = int(batch.namespace[k])
        if ns == CONSTANT_NAMESPACE:
            names.append("Constant")
            continue
        name_s, name_e, sval_s, sval_e, ns_s, ns_e = batch.audit[k]
        name = _name(batch.text, name_s, name_e)
        if sval_s >= 0:
            name += "^" + _name(batch.text, sval_s, sval_e)
        if ns_s >= 0:
            name = _name(batch.text, ns_s, ns_e) + "^" + name
        elif ns != DEFAULT_NAMESPACE:
            name = chr(ns) + "^" + name
        names.append(name)
    return names


def audit_line(batch: ExampleBatch, e: int, weights: np.ndarray, adaptive: bool) -> str:
    """The TAB-led feature line, sorted by |weight·value| (largest first), before learning."""
    entries = []
    for name, k in zip(feature_names(batch, e), range(batch.offsets[e], batch.offsets[e + 1])):
        j = int(batch.index[k])
        x = float(batch.value[k])
        w = float(weights[j, 0])
        text = f"{name}:{j}:{x:g}:{w:g}" + (f"@{float(weights[j, 1]):g}" if adaptive else "")
        entries.append((-abs(w * x), text))
    entries.sort(key=lambda item: item[0])
    return "".join("\t" + text for _, text in entries)
