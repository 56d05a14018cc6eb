"""Slow, obviously-correct reference implementations the numba kernels are checked against."""
from __future__ import annotations

import math

import mmh3
import numpy as np

CONSTANT = 11650396


def vw_hash(name: bytes, seed: int, hash_all: bool = False) -> int:
    if hash_all:
        return mmh3.hash(name, seed, signed=False)
    trimmed = name.strip(bytes(range(33)))
    if all(48 <= c <= 57 for c in trimmed):
        return (int(trimmed or b"0") + seed) & 0xFFFFFFFF
    return mmh3.hash(trimmed, seed, signed=False)


def parse_vw_line(line: bytes, bits: int = 18, seed: int = 0, constant: bool = True):
    """A well-formed VW text line → (label, importance, initial, tag, [(index, value, ns)])."""
    mask = (1 << bits) - 1
    head, _, rest = line.partition(b"|")
    if b"\t" in head:
        head = head.split(b"\t", 1)[1]
    tokens = [t for t in head.split(b" ") if t]
    tag = None
    if tokens and (tokens[-1].startswith(b"'") or not head.endswith(b" ")):
        tag = tokens.pop()
        tag = tag[1:] if tag.startswith(b"'") else tag
    numbers = [float(t) for t in tokens]
    label = numbers[0] if numbers else math.nan
    importance = numbers[1] if len(numbers) > 1 else 1.0
    initial = numbers[2] if len(numbers) > 2 else 0.0
    features = []
    for segment in (line.split(b"|")[1:] if b"|" in line else []):
        if segment[:1] in (b"", b" ", b"\t"):
            ns, ns_hash, scale, body = 32, (0 if seed == 0 else mmh3.hash(b"", seed, signed=False)), 1.0, segment
        else:
            header, _, body = segment.replace(b"\t", b" ").partition(b" ")
            name, _, scale_text = header.partition(b":")
            ns, ns_hash = name[0], vw_hash(name, seed)
            scale = float(scale_text) if scale_text else 1.0
        anon = 0
        for token in body.replace(b"\t", b" ").split(b" "):
            if not token:
                continue
            name, colon, value_text = token.partition(b":")
            string_value = None
            if not colon or not value_text:
                value = scale
            else:
                try:
                    value = float(np.float32(scale) * np.float32(float(value_text)))
                except ValueError:
                    string_value, value = value_text, 1.0
            if name:
                h = vw_hash(name, ns_hash)
            else:
                h = (ns_hash + anon) & 0xFFFFFFFF
                anon += 1
            if string_value is not None:
                h = vw_hash(string_value, h)
            if np.float32(value) != 0:
                features.append((h & mask, value, ns))
    # a repeated namespace joins its first appearance (sorted() is stable)
    first_seen = {}
    for segment_ns in [f[2] for f in features]:
        first_seen.setdefault(segment_ns, len(first_seen))
    features = sorted(features, key=lambda f: first_seen[f[2]])
    if constant:
        features.append((CONSTANT & mask, 1.0, 128))
    return label, importance, initial, tag, features


def parse_svm_line(line: bytes, bits: int = 18, constant: bool = True):
    """A well-formed svmlight line → (label, [(index, value, ns)]), features in namespace f."""
    mask = (1 << bits) - 1
    body = line.split(b"#", 1)[0].split()
    ns_hash = vw_hash(b"f", 0)
    features = []
    for token in body[1:]:
        name, _, value = token.partition(b":")
        if name == b"qid" or float(value) == 0:
            continue
        features.append((vw_hash(name, ns_hash) & mask, float(value), ord("f")))
    if constant:
        features.append((CONSTANT & mask, 1.0, 128))
    return float(body[0]), features


def gd_predictions(examples, bits, adaptive, normalized, invariant, eta, power_t=0.5, t0=0.0,
                   l1=0.0, l2=0.0, final_weights=None):
    """VW's gd (vw-reference.md §3) in plain Python, squared loss: progressive predictions.

    ``examples`` is a list of (label or None, importance, [(index, value)]). With ``l1``/``l2``,
    each update is followed by the proximal step of step size η̄ = −u/loss′ applied to every
    weight, eagerly (algorithms.md §1): the dense computation the lazy kernel must equal.
    ``final_weights``, a dict, receives the weights after the last example.
    """
    x_min = 1.084202e-19
    w, g, n = {}, {}, {}
    lo = hi = 0.0
    s_norm = s_total = t0 if (adaptive and normalized and t0 > 0) else 0.0
    t = t0
    out = []
    for label, imp, feats in examples:
        learn = label is not None and imp > 0
        if learn:
            lo, hi = min(lo, label), max(hi, label)
        raw = sum(w.get(j, 0.0) * x for j, x in feats)
        p = min(max(raw, lo), hi)
        out.append(p)
        if learn and (p - label) ** 2 > 0:
            grad2 = imp * 4 * (p - label) ** 2
            rates, norm_x, ppu = {}, 0.0, 0.0
            for j, x in feats:
                if x * x < x_min * x_min:
                    x = math.copysign(x_min, x)
                rate = 1.0
                if adaptive:
                    g[j] = g.get(j, t0) + grad2 * x * x
                    rate = g[j] ** -power_t
                if normalized:
                    if abs(x) > n.get(j, 0.0):
                        if n.get(j, 0.0) > 0:
                            power = power_t - 1 if adaptive else -1.0
                            w[j] = w.get(j, 0.0) * ((abs(x) / n[j]) ** 2) ** power
                        n[j] = abs(x)
                    norm_x += x * x / n[j] ** 2
                    rate *= (n[j] ** 2) ** (power_t - 1 if adaptive else -1.0)
                rates[j] = rate
                ppu += x * x * rate
            multiplier = 1.0
            if normalized:
                s_norm += imp * norm_x
                s_total += imp
                multiplier = (s_norm / s_total) ** (power_t - 1 if adaptive else -1.0)
                ppu *= multiplier
            scale = eta * imp * (1.0 if adaptive else (t + imp) ** -power_t)
            if invariant:
                sq = scale * ppu
                u = 2 * (label - p) * scale if sq < 1e-6 else (label - p) * (1 - math.exp(-2 * sq)) / ppu
            else:
                u = 2 * (label - p) * scale
            d1 = 2 * (p - label)
            eta_bar = -u / d1 if abs(u) > 1e-8 and abs(d1) > 1e-8 else 0.0
            u *= multiplier
            for j, x in feats:
                w[j] = w.get(j, 0.0) + u * x * (rates[j] if (adaptive or normalized) else 1.0)
            if eta_bar > 0:
                for j, wj in w.items():
                    shrunk = max(0.0, abs(wj) - eta_bar * l1) / (1 + eta_bar * l2)
                    w[j] = math.copysign(shrunk, wj)
        t += imp
    if final_weights is not None:
        final_weights.update(w)
    return out


def stage_poly_synthetic(features, constant, mask, min_depth, parents, training):
    """VW's stage_poly expansion (vw-reference.md §7.3), recursively: the synthetic features of
    ``features`` [(index, value)]; updates ``min_depth`` (dict, default 127) and ``parents``
    (set) in training as VW does."""
    out, in_example = [], set()

    def child(a, g):
        if a == constant:
            return g
        if g == constant:
            return a
        return (a ^ (16777619 * g)) & mask

    def walk(g, x, depth):
        for a, v in features:
            c = child(a, g)
            if training and depth < min_depth.get(c, 127):
                parents.discard(c)
                min_depth[c] = depth
            if c not in in_example and min(depth, 127) == min_depth.get(c, 127):
                in_example.add(c)
                value = float(np.float32(v * x))
                out.append((c, value))
                if c in parents:
                    walk(c, value, depth + 1)

    walk(constant, 1.0, 0)
    return out


def best_monomials(scores, count, excluded):
    """The ``count`` indices of largest score above 1e-9, not in ``excluded`` (no ties)."""
    ranked = sorted((s, j) for j, s in enumerate(scores) if j not in excluded and s > 1e-9)
    return {j for _, j in ranked[-count:]} if count else set()
