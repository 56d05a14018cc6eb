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
            ns, ns_hash, scale, body = (
                32, (0 if seed == 0 else mmh3.hash(b"", seed, signed=False)), 1.0, segment)
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


class GradientDescent:
    """VW's gd update (vw-reference.md §3) in plain Python, squared loss (or, ``quantile``, the
    quantile loss at τ = 0.5): weights, adaptive sums and normalizers keyed by slot; the
    normalized update's sums S and T are passed in, so that several problems can share the
    weights and keep their own (--oaa)."""

    X_MIN = 1.084202e-19

    def __init__(self, adaptive, normalized, invariant, eta, power_t=0.5, t0=0.0,
                 sparse_l2=0.0, masked=False, quantile=False):
        self.quantile = quantile
        self.adaptive, self.normalized, self.invariant = adaptive, normalized, invariant
        self.eta, self.power_t, self.t0 = eta, power_t, t0
        self.sparse_l2, self.masked = sparse_l2, masked  # --sparse_l2, --feature_mask
        self.w, self.g, self.n = {}, {}, {}
        self.rates, self.multiplier = {}, 0.0  # as the last update left them

    def _multiplier(self, sums) -> float:
        if not self.normalized:
            return 1.0
        if sums[1] <= 0 or sums[0] <= 0:
            return 0.0
        return (sums[0] / sums[1]) ** (self.power_t - 1 if self.adaptive else -1.0)

    def _step(self, feats, u) -> None:
        """The weight step ``u``; with the mask, a weight at 0 stays 0."""
        for j, x in feats:
            if self.masked and self.w.get(j, 0.0) == 0.0:
                continue
            rate = self.rates.get(j, 0.0) if (self.adaptive or self.normalized) else 1.0
            self.w[j] = self.w.get(j, 0.0) + u * x * rate

    def fresh_sums(self) -> list:
        start = self.t0 if (self.adaptive and self.normalized and self.t0 > 0) else 0.0
        return [start, start]

    def predict(self, feats) -> float:
        return sum(self.w.get(j, 0.0) * x for j, x in feats)

    def update(self, feats, p, label, imp, t, sums) -> float:
        """Learn (label, importance) at prediction ``p``; returns η̄ = −u/loss′ (0: none).
        With a loss of 0 only --sparse_l2's step −λp is taken, with the last rates and
        multiplier."""
        if (p - label) ** 2 <= 0:
            self._step(feats, -self.sparse_l2 * p * self._multiplier(sums))
            return 0.0
        adaptive, normalized, power_t = self.adaptive, self.normalized, self.power_t
        w, g, n = self.w, self.g, self.n
        d1 = (0.5 if p > label else -0.5) if self.quantile else 2 * (p - label)
        grad2 = imp * d1 * d1
        norm_x, ppu = 0.0, 0.0
        for j, x in feats:
            if self.masked and w.get(j, 0.0) == 0.0:
                continue
            if x * x < self.X_MIN * self.X_MIN:
                x = math.copysign(self.X_MIN, x)
            rate = 1.0
            if adaptive:
                g[j] = g.get(j, self.t0) + grad2 * x * x
                rate = g[j] ** -power_t
            if normalized:
                if abs(x) > n.get(j, 0.0):
                    if n.get(j, 0.0) > 0:
                        power = power_t - 1 if adaptive else -1.0
                        w[j] = w.get(j, 0.0) * ((abs(x) / n[j]) ** 2) ** power
                    n[j] = abs(x)
                norm_x += x * x / n[j] ** 2
                rate *= (n[j] ** 2) ** (power_t - 1 if adaptive else -1.0)
            self.rates[j] = rate
            ppu += x * x * rate
        if normalized:
            sums[0] += imp * norm_x
            sums[1] += imp
        multiplier = self._multiplier(sums)
        if multiplier == 0.0:
            return 0.0
        ppu *= multiplier
        scale = self.eta * imp * (1.0 if adaptive else (t + imp) ** -power_t)
        if self.invariant and self.quantile:  # the exact step, capped where p meets the label
            u = math.copysign(min(0.5 * scale, abs(label - p) / ppu), label - p)
        elif self.invariant:
            sq = scale * ppu
            u = (2 * (label - p) * scale if sq < 1e-6
                 else (label - p) * (1 - math.exp(-2 * sq)) / ppu)
        else:
            u = -d1 * scale
        eta_bar = -u / d1 if abs(u) > 1e-8 and abs(d1) > 1e-8 else 0.0
        self._step(feats, (u - self.sparse_l2 * p) * multiplier)
        return eta_bar


def gd_predictions(examples, bits, adaptive, normalized, invariant, eta, power_t=0.5, t0=0.0,
                   l1=0.0, l2=0.0, final_weights=None, sparse_l2=0.0, initial=None):
    """VW's gd in plain Python, squared loss: progressive predictions.

    ``examples`` is a list of (label or None, importance, [(index, value)]). With ``l1``/``l2``,
    each update is followed by the proximal step of step size η̄ = −u/loss′ applied to every
    weight, eagerly (algorithms.md §1): the dense computation the lazy kernel must equal.
    ``final_weights``, a dict, receives the weights after the last example. ``initial``, a
    dict of weights, is --feature_mask's: they start there, and only those nonzero learn.
    """
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0, sparse_l2,
                         initial is not None)
    gd.w.update(initial or {})
    sums = gd.fresh_sums()
    lo = hi = 0.0
    t = t0
    out = []
    for label, imp, feats in examples:
        learn = label is not None and imp > 0
        if learn:
            lo, hi = min(lo, label), max(hi, label)
        p = min(max(gd.predict(feats), lo), hi)
        out.append(p)
        if learn:
            eta_bar = gd.update(feats, p, label, imp, t, sums)
            if eta_bar > 0:
                for j, wj in gd.w.items():
                    shrunk = max(0.0, abs(wj) - eta_bar * l1) / (1 + eta_bar * l2)
                    gd.w[j] = math.copysign(shrunk, wj)
        if label is not None:  # VW's t counts labeled examples only
            t += imp
    if final_weights is not None:
        final_weights.update(gd.w)
    return out


def autolink_predictions(examples, rows, eta):
    """VW's --autolink over its default gd in plain Python, squared loss: each example is
    predicted (clipped), its prediction's powers p0, p0², ... (float32, none once one is 0)
    join it at ``rows``, and the example with them is predicted and learned. Progressive
    predictions; ``examples`` as for :func:`gd_predictions`."""
    gd = GradientDescent(True, True, True, eta)
    sums = gd.fresh_sums()
    lo = hi = 0.0
    out = []
    for label, imp, feats in examples:
        learn = label is not None and imp > 0
        if learn:
            lo, hi = min(lo, label), max(hi, label)
        p0 = np.float32(min(max(gd.predict(feats), lo), hi))
        linked, power = list(feats), p0
        for row in rows:
            if power != 0:
                linked.append((row, float(power)))
                power = np.float32(power * p0)
        p = min(max(gd.predict(linked), lo), hi)
        out.append(p)
        if learn:
            gd.update(linked, p, label, imp, 0.0, sums)
    return out


def _namespace_runs(feats):
    """An example's features ``(j, x, ns)`` as runs of one namespace: (ns, [(j, x), ...])."""
    runs = []
    for j, x, ns in feats:
        if runs and runs[-1][0] == ns:
            runs[-1][1].append((j, x))
        else:
            runs.append((ns, [(j, x)]))
    return runs


def marginal_predictions(examples, namespaces, numerator=0.5, denominator=1.0, decay=0.0,
                         compete=False, before=False, unweighted=False, eta=0.5):
    """VW's --marginal over its default gd in plain Python, squared loss: in ``namespaces``
    each pair ``x id`` (both of value 1) becomes x with the id's marginal num/den; the learner
    predicts and learns that; a learned example then updates every pair's id (from 0/0 when
    new): with ``compete`` the id's two AdaNormalHedge experts first, then num and den
    (decayed, plus label·weight and weight). ``before``: VW 9.11.9's --update_before_learn,
    whose update reads the marginalized example, so updates x of every second valid pair.
    ``examples``: (label or None, importance, [(j, x, ns)]). Returns the predictions shown
    and the sums by key."""
    gd = GradientDescent(True, True, True, eta)
    sums = gd.fresh_sums()
    bounds = [0.0, 0.0]
    marginals, experts = {}, {}
    out, t = [], 0.0

    def loss(p, y):
        lo, hi = bounds
        if lo <= p <= hi:
            return (p - y) ** 2
        if p < lo:
            return 0.0 if y == lo else (y - lo) ** 2 + 2 * (y - lo) * (lo - p)
        return 0.0 if y == hi else (hi - y) ** 2 + 2 * (hi - y) * (p - hi)

    def marginal(key):
        num, den = marginals[key]
        with np.errstate(invalid="ignore", divide="ignore"):
            return float(np.float32(np.float64(num) / den))

    def valid_pairs(feats):
        for ns, run in _namespace_runs(feats):
            if ns in namespaces:
                yield from ((run[i], run[i + 1]) for i in range(0, len(run) - 1, 2)
                            if run[i][1] == 1 and run[i + 1][1] == 1)

    def marginalize(feats, label, learn):
        copy, total, weights, feature_weights, mixed_loss = [], 0.0, 0.0, 0.0, 0.0
        for ns, run in _namespace_runs(feats):
            if ns not in namespaces:
                copy += run
                continue
            for i in range(0, len(run) - 1, 2):
                (x, vx), (key, vk) = run[i], run[i + 1]
                if vx != 1 or vk != 1:
                    continue
                if key not in marginals:
                    marginals[key] = [numerator, denominator]
                    experts[key] = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
                m = marginal(key)
                copy.append((x, m))
                if compete:
                    w = experts[key][2]
                    total += w * m
                    weights += w
                    feature_weights += experts[key][5]
                    if learn:
                        mixed_loss += w * loss(m, label)
        return copy, (total, weights, feature_weights, mixed_loss)

    def mix(sums4, p, label):
        total, weights, feature_weights, mixed_loss = sums4
        if weights + feature_weights > 0:
            total += feature_weights * p
        else:
            feature_weights, total = 1.0, p
        if label is not None:
            mixed_loss += feature_weights * loss(p, label)
        return total / (weights + feature_weights), mixed_loss / (weights + feature_weights)

    def hedge(r, c):
        r = r if r > 0 else 0.0  # NaN (a regret from a 0/0 marginal) too
        return 0.0 if c == 0 or r == 0 else 2 * r * math.exp(r * r / (3 * c)) / (3 * c)

    def update(keys, label, imp, mixed_loss, p):
        weight = 1.0 if unweighted else imp
        for key in keys:
            if key not in marginals:
                marginals[key] = [0.0, 0.0]
                experts[key] = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
            if compete:
                e = experts[key]
                for at, regret in ((0, mixed_loss - loss(marginal(key), label)),
                                   (3, mixed_loss - loss(p, label))):
                    e[at] += regret * weight
                    e[at + 1] += regret * regret * weight
                    e[at + 2] = hedge(e[at], e[at + 1])
            num, den = marginals[key]
            marginals[key] = [num * (1 - decay) + label * weight, den * (1 - decay) + weight]

    for label, imp, feats in examples:
        learn = label is not None and imp > 0
        if learn:
            bounds[:] = min(bounds[0], label), max(bounds[1], label)
        copy, sums4 = marginalize(feats, label, learn)
        if learn and before:
            shown = min(max(gd.predict(copy), bounds[0]), bounds[1])
            mixed_loss = mix(sums4, shown, label)[1] if compete else 0.0
            firsts = [x for (x, _), _ in valid_pairs(feats)]
            update(firsts[1::2], label, imp, mixed_loss, shown)
            copy = marginalize(feats, label, learn)[0]
            p = min(max(gd.predict(copy), bounds[0]), bounds[1])
            gd.update(copy, p, label, imp, t, sums)
        else:
            p = shown = min(max(gd.predict(copy), bounds[0]), bounds[1])
            mixed_loss = 0.0
            if compete:
                shown, mixed_loss = mix(sums4, p, label)
            if learn:
                gd.update(copy, p, label, imp, t, sums)
                ids = [run[i + 1][0] for ns, run in _namespace_runs(feats) if ns in namespaces
                       for i in range(0, len(run) - 1, 2)]
                update(ids, label, imp, mixed_loss, p)
        out.append(shown)
        if learn:
            t += imp
    return out, marginals


def feature_width(classes: int) -> int:
    """VW's feature width of K classes: the smallest power of two >= K."""
    width = 1
    while width < classes:
        width *= 2
    return width


def oaa_predictions(examples, classes, bits, adaptive=True, normalized=True, invariant=True,
                    eta=0.5, power_t=0.5, t0=0.0):
    """VW's --oaa over gd in plain Python (olearn/reductions/oaa.py, vw-reference.md §10), squared
    loss, 1-based labels: each example's predicted class and clipped per-class scores.

    Feature h of class k is slot (h·W + k) mod 2^bits, W the power of two >= ``classes``; the
    weights and t are shared, each class keeps its normalizer sums; every class is predicted
    with the clipping range before the example, then learns ±1 in turn.
    """
    mask = (1 << bits) - 1
    width = feature_width(classes)
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = [gd.fresh_sums() for _ in range(classes)]
    lo = hi = 0.0
    t = t0
    out = []
    for label, imp, feats in examples:
        per_class = [[((j * width + k) & mask, x) for j, x in feats] for k in range(classes)]
        scores = [min(max(gd.predict(f), lo), hi) for f in per_class]
        best = max(range(classes), key=lambda k: (scores[k], -k))
        out.append((best + 1, scores))
        if label is None:
            continue
        if imp > 0:
            for k in range(classes):
                y = 1.0 if label == k + 1 else -1.0
                lo, hi = min(lo, y), max(hi, y)
                gd.update(per_class[k], scores[k], y, imp, t, sums[k])
        t += imp
    return out


def ect_predictions(examples, classes, errors, bits, adaptive=True, normalized=True,
                    invariant=True, eta=0.5, power_t=0.5, t0=0.0):
    """VW's --ect over gd in plain Python (olearn/reductions/ect.py), squared loss: each
    example's predicted class (1..K), made before it is learned.

    Problem i is slot (h·W + i) mod 2^bits, W the power of two >= the problem count, with its
    own normalizer sums; a match's right player wins at a clipped score > 0. Learning walks the
    label's path (each match learns the class's side, and is won when the updated problem then
    predicts that side), then the final tournament's mixed pairs learn with weight
    2^(depth left), halving the list of won flags as VW's loop does. Each prediction comes with
    the smallest nonzero |score| of the matches it played and of every match learned before it
    (how close float rounding came to a flip; a score of 0, no weight learned, is 0 in float32
    too)."""
    from olearn.reductions.ect import N_LAST, N_LEFT, N_LOSER, N_RIGHT, N_WINNER, circuit
    nodes, finals = circuit(classes, errors)
    nodes, finals = nodes.tolist(), finals.tolist()
    last_pair = (classes - 1) * (errors + 1)
    height = errors.bit_length()
    problems = last_pair + errors
    mask, width = (1 << bits) - 1, feature_width(problems)
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = [gd.fresh_sums() for _ in range(problems)]
    lo = hi = 0.0
    t = t0
    out = []
    learned = math.inf  # the closest call of the matches learned so far

    def slots(feats, i):
        return [((j * width + i) & mask, x) for j, x in feats]

    def score(feats, i):
        return min(max(gd.predict(slots(feats, i)), lo), hi)

    def learn(feats, i, right, imp):
        nonlocal lo, hi
        y = 1.0 if right else -1.0
        lo, hi = min(lo, y), max(hi, y)
        p = score(feats, i)
        if imp > 0:
            gd.update(slots(feats, i), p, y, imp, t, sums[i])
        return p

    for label, imp, feats in examples:
        winner = 0
        played = [math.inf]
        for i in reversed(range(height)):
            if winner | (1 << i) <= errors:
                played.append(score(feats, last_pair + (winner | (1 << i)) - 1))
                winner |= (1 << i) if played[-1] > 0 else 0
        node = finals[winner]
        while node >= classes:
            played.append(score(feats, node - classes))
            node = nodes[node][N_RIGHT if played[-1] > 0 else N_LEFT]
        out.append((node + 1, min(learned, *(abs(p) or math.inf for p in played))))
        if label is None:
            continue
        if imp > 0 and 1 <= label <= classes:
            won = []
            c = int(label) - 1
            node = nodes[c][N_WINNER]
            left = nodes[node][N_LEFT] == c
            while node != 0:
                learn(feats, node - classes, not left, imp)
                after = score(feats, node - classes)
                learned = min(learned, abs(after) or math.inf)
                ahead = after > 0 if not left else after < 0
                step = N_WINNER if ahead else N_LOSER
                if nodes[node][N_LAST]:
                    won.append(ahead)
                elif not ahead and nodes[node][N_LOSER] == 0:
                    won.append(False)
                if not nodes[node][N_LAST]:
                    left = nodes[nodes[node][step]][N_LEFT] == node
                node = nodes[node][step]
            for i in range(height):
                j = 0
                while j < len(won) // 2:
                    a, b = won[2 * j], won[2 * j + 1]
                    if a != b:
                        p = learn(feats, last_pair + j * (1 << (i + 1)) + (1 << i) - 1, not a,
                                  float(1 << (height - i - 1)))
                        learned = min(learned, abs(p) or math.inf)
                        a = b if p > 0 else a
                    won[j] = a
                    if len(won) % 2:
                        won[len(won) // 2] = won[-1]
                    won = won[:(len(won) + 1) // 2]
                    j += 1
        t += imp
    return out


def log_multi_predictions(examples, classes, bits, swap_resistance=4, eta=0.5, power_t=0.5,
                          tree=None):
    """VW's --log_multi over its default gd in plain Python (olearn/reductions/log_multi.py),
    quantile loss at τ = 0.5: each example's predicted class, made before it is learned.

    Nodes are dicts (parent, children, counts, the problem's score sums, per-label dicts); a
    leaf that has seen two labels splits while problems remain, else (past the swap
    resistance) takes the problem of the leaf reached by always taking the child with fewer
    examples, whose sibling replaces their parent. ``tree``, a list, receives the nodes."""
    mask, width = (1 << bits) - 1, feature_width(classes - 1)
    gd = GradientDescent(True, True, True, eta, power_t, quantile=True)
    sums = [gd.fresh_sums() for _ in range(classes - 1)]
    lo = hi = 0.0
    f32 = np.float32

    def fresh(node=None, parent=0, count=0):
        node = node if node is not None else {}
        node.update(parent=parent, count=count, internal=False, problem=0, left=0, right=0,
                    eh=0.0, mean=f32(0), n=0, best_count=0, best=1, labels={})
        return node

    nodes = [fresh()]
    used = 0

    def blank():
        return {"sum": 0.0, "mean": f32(0), "n": 0, "count": 0}

    def slots(feats, i):
        return [((j * width + i) & mask, x) for j, x in feats]

    def settle(i):  # the counts up from node i
        while i != 0:
            child, i = i, nodes[i]["parent"]
            if nodes[i]["count"] == nodes[child]["count"]:
                break
            nodes[i]["count"] = min(nodes[nodes[i]["left"]]["count"],
                                    nodes[nodes[i]["right"]]["count"])

    def reach(i, label):
        nonlocal used
        node = nodes[i]
        seen = node["labels"].setdefault(label, blank())
        seen["count"] += 1
        if seen["count"] > node["best_count"]:
            node["best_count"], node["best"] = seen["count"], label
        if node["internal"]:
            return True
        others = (node["count"] - node["best_count"]) % (1 << 32)
        if len(node["labels"]) < 2 or not (
                used < classes - 1 or others > swap_resistance * (nodes[0]["count"] + 1)):
            return False
        if used < classes - 1:
            left, right = len(nodes), len(nodes) + 1
            nodes.extend([fresh(), fresh()])
            node["problem"], used = used, used + 1
        else:
            leaf = 0
            while nodes[leaf]["internal"]:
                a, b = nodes[leaf]["left"], nodes[leaf]["right"]
                leaf = a if nodes[a]["count"] < nodes[b]["count"] else b
            parent = nodes[leaf]["parent"]
            if leaf == i or parent == 0:  # VW would loop forever: olearn keeps the leaf
                return False
            grand = nodes[parent]["parent"]
            sibling = nodes[parent]["left" if leaf == nodes[parent]["right"] else "right"]
            nodes[grand]["left" if parent == nodes[grand]["left"] else "right"] = sibling
            nodes[sibling]["parent"] = grand
            settle(sibling)
            problem = nodes[parent]["problem"]
            for j in (leaf, parent):
                fresh(nodes[j], nodes[j]["parent"], nodes[j]["count"])
            left, right = leaf, parent
            node["problem"] = problem
        node["left"], node["right"] = left, right
        nodes[left]["parent"] = nodes[right]["parent"] = i
        nodes[left]["count"] = node["count"] // 2
        nodes[right]["count"] = node["count"] - nodes[left]["count"]
        settle(left)
        nodes[left]["best"] = nodes[right]["best"] = node["best"]
        node["internal"] = True
        return True

    out = []
    for label, imp, feats in examples:
        i = 0
        while nodes[i]["internal"]:
            p = min(max(gd.predict(slots(feats, nodes[i]["problem"])), lo), hi)
            i = nodes[i]["left"] if p < 0 else nodes[i]["right"]
        out.append(nodes[i]["best"])
        if label is None or imp <= 0 or not 1 <= label <= classes:
            continue
        i = 0
        while reach(i, int(label)):
            node = nodes[i]
            # a swap may have cleared this very leaf: its label's statistics start over
            seen = node["labels"].setdefault(int(label), blank())
            y = -1.0 if node["mean"] > seen["mean"] else 1.0
            lo, hi = min(lo, y), max(hi, y)
            feats_i = slots(feats, node["problem"])
            gd.update(feats_i, min(max(gd.predict(feats_i), lo), hi), y, imp, 0.0,
                      sums[node["problem"]])
            raw = float(f32(gd.predict(feats_i)))
            node["eh"] += raw
            seen["sum"] += raw
            node["n"] += 1
            seen["n"] += 1
            node["mean"] = f32(node["eh"]) / f32(node["n"])
            seen["mean"] = f32(seen["sum"]) / f32(seen["n"])
            i = node["left"] if min(max(raw, lo), hi) < 0 else node["right"]
        nodes[i]["count"] += 1
        settle(i)
    if tree is not None:
        tree.extend(nodes)
    return out


def csoaa_predictions(examples, classes, bits, adaptive=True, normalized=True, invariant=True,
                      eta=0.5, power_t=0.5, t0=0.0):
    """VW's --csoaa over gd in plain Python (olearn/reductions/csoaa.py), squared loss,
    1-based classes: each example's predicted class and the raw score of each class it lists.

    ``examples``: ([(class, cost or None)], features). Class k's feature h is slot
    (h·W + k - 1) mod 2^bits as --oaa's; each listed class in turn joins its cost to the label
    range, is predicted, and learns its cost at its clipped score (importance 1) with its own
    normalizer sums; a class without a cost is predicted only. The prediction is the listed
    class of lowest raw score (the lowest class of equal ones); no listed class: every class.
    """
    mask = (1 << bits) - 1
    width = feature_width(classes)
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = [gd.fresh_sums() for _ in range(classes)]
    lo = hi = 0.0
    t = t0
    out = []
    for costs, feats in examples:
        listed = costs or [(c, None) for c in range(1, classes + 1)]
        scores = []
        for c, cost in listed:
            slots = [((j * width + c - 1) & mask, x) for j, x in feats]
            raw = gd.predict(slots)
            if cost is not None:
                lo, hi = min(lo, cost), max(hi, cost)
                gd.update(slots, min(max(raw, lo), hi), cost, 1.0, t, sums[c - 1])
            scores.append((c, raw))
        best = min(scores, key=lambda pair: (pair[1], pair[0]))[0]
        out.append((best, scores if costs else []))
        if any(cost is not None for _, cost in costs):
            t += 1.0
    return out


def multilabel_predictions(examples, classes, bits, adaptive=True, normalized=True,
                           invariant=True, eta=0.5, power_t=0.5, t0=0.0):
    """VW's --multilabel_oaa over gd in plain Python (olearn/reductions/multilabel.py), squared
    loss: each example's predicted classes (clipped score > 0) and clipped scores.

    ``examples``: (ascending classes or None, features). Class k's feature h is slot
    (h·W + k) mod 2^bits; the classes learn in order, each's ±1 joining the label range before
    its prediction, with its own normalizer sums.
    """
    mask = (1 << bits) - 1
    width = feature_width(classes)
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = [gd.fresh_sums() for _ in range(classes)]
    lo = hi = 0.0
    t = t0
    out = []
    for labels, feats in examples:
        scores = []
        for k in range(classes):
            slots = [((j * width + k) & mask, x) for j, x in feats]
            if labels:
                y = 1.0 if k in labels else -1.0
                lo, hi = min(lo, y), max(hi, y)
            p = min(max(gd.predict(slots), lo), hi)
            if labels:
                gd.update(slots, p, y, 1.0, t, sums[k])
            scores.append(p)
        out.append(([k for k in range(classes) if scores[k] > 0], scores))
        if labels:
            t += 1.0
    return out


def _bbm_weight(n: int, i: int, s: float, gamma: float) -> float:
    """Online BBM's weight of weak learner i of n at partial margin s (VW's boosting.cc)."""
    k = math.floor((n - i - s) / 2)
    rest = n - i - 1
    if not 0 <= k <= rest:
        return 0.0
    return math.comb(rest, k) * (0.5 + gamma) ** k * (0.5 - gamma) ** (rest - k)


def boosting_predictions(examples, learners, bits, alg="BBM", gamma=0.1, seed=0, learned=None,
                         adaptive=True, normalized=True, invariant=True, eta=0.5, power_t=0.5,
                         t0=0.0):
    """VW's --boosting over gd in plain Python (olearn/reductions/boosting.py, vw-reference.md
    §9.7), squared loss: each example's prediction and reported loss.

    ``examples``: (label or None, importance, features); only the first ``learned`` (all:
    None) are learned, the others predicted as with -t. Weak learner i's feature h is slot
    (h·W + i) mod 2^bits. VW first predicts (every learner clipped to the range before the
    label, α and v before the example, adaptive stopping at a draw), then learns: learner i
    with the importance times its algorithm's weight, at its score clipped to the range with
    the label (learner 0: before it); the reported loss is the last weak learner's that
    learned (else the last one predicted).
    """
    mask = (1 << bits) - 1
    width = feature_width(learners)
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = [gd.fresh_sums() for _ in range(learners)]
    alpha, v = [0.0] * learners, [1.0] * learners
    lo = hi = 0.0
    t, clock, state = t0, 0, seed
    out = []

    def draw():
        nonlocal state
        state = (0xEECE66D5DEECE66D * state + 2147483647) % 2 ** 64
        return ((state >> 25) & 0x7FFFFF) / 2 ** 23

    for e, (label, imp, feats) in enumerate(examples):
        slots = [[((j * width + i) & mask, x) for j, x in feats] for i in range(learners)]
        raws = [gd.predict(f) for f in slots]  # learner i's weights move in its own update only
        stop = draw() if alg == "adaptive" else 0.0
        shown, v_sum, reported = 0.0, 0.0, 0.0
        for i in range(learners):
            p = min(max(raws[i], lo), hi)
            reported = (p - label) ** 2 * imp if label is not None else 0.0
            if alg == "adaptive" and v_sum > stop:
                break
            shown += p * (1.0 if alg == "BBM" else alpha[i])
            v_sum += v[i]
        if label is not None and imp > 0 and (learned is None or e < learned):
            clock += 1
            rate = 4 / math.sqrt(clock)
            if alg == "adaptive":
                draw()
            before = (lo, hi)
            lo, hi = min(lo, label), max(hi, label)
            s = partial = v_norm = 0.0
            for i in range(learners):
                w = (_bbm_weight(learners, i, s, gamma) if alg == "BBM"
                     else 1 / (1 + math.exp(min(s, 700.0))))
                p_learned = min(max(raws[i], lo), hi)
                if imp * w > 0:
                    reported = (p_learned - label) ** 2 * imp * w
                    gd.update(slots[i], p_learned, label, imp * w, t, sums[i])
                p = min(max(raws[i], before[0]), before[1]) if i == 0 else p_learned
                a = 1.0 if alg == "BBM" else alpha[i]
                s += label * p * a
                if alg == "BBM":
                    continue
                if alg == "adaptive":
                    partial += p * a
                    if label * partial < 0:
                        v[i] *= 0.36788
                    v_norm += v[i]
                alpha[i] = min(max(a + rate * label * p / (1 + math.exp(min(s, 700.0))), -2.0),
                               2.0)
            if v_norm:
                v = [x / v_norm for x in v]
        if label is not None:
            t += imp
        out.append((shown, reported))
    return out


def parse_costs(section: bytes, names=None):
    """A well-formed cost-sensitive label section → [(class, cost or None)], tag: each token
    ``name[:cost]``, the class the name's number (or with ``names`` its 1-based position, 0
    for a name not listed); no cost or an empty one: None."""
    tokens = [t for t in section.split(b" ") if t]
    tag = None
    if tokens and (tokens[-1].startswith(b"'") or not section.endswith(b" ")):
        tag = tokens.pop()
        tag = tag[1:] if tag.startswith(b"'") else tag
    out = []
    for token in tokens:
        name, _, cost = token.partition(b":")
        if names is not None:
            cls = names.index(name.decode()) + 1 if name.decode() in names else 0
        else:
            cls = vw_hash(name, 0)
        out.append((cls, float(cost) if cost else None))
    return out, tag


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


def _at_least(b: float, x: float) -> float:
    while b < x:
        b *= 2.0
    return b


def _frozen_rate(eta: float) -> float:
    """The greatest 2^(i/16) <= eta, i in [-16000, 320] (BOA's frozen rates), as
    2^floor(i/16) × 2^((i mod 16)/16)."""
    def rate(i):
        return math.ldexp(2.0 ** ((i % 16) / 16), i // 16)
    level = min(max(math.floor(16 * math.log2(eta)) if eta > 0 else -16000, -16000), 320)
    while level < 320 and rate(level + 1) <= eta:
        level += 1
    while level > -16000 and rate(level) > eta:
        level -= 1
    return rate(level)


class _Instance:
    """One SAEW instance over every coordinate of the data, updated densely; only the active
    ones (seen in a learned example) count in the normalization, as olearn's compact index."""

    def __init__(self, n_coords, sub, d0, alpha, radius, b_scale=1.0, regrow=0.0,
                 regrow_floor=50.0, sgd_eta=1.0, sgd_l1=0.0):
        self.sub, self.d0, self.alpha, self.radius, self.b_scale = sub, d0, alpha, radius, b_scale
        self.regrow, self.regrow_floor = regrow, regrow_floor
        self.sgd_eta, self.sgd_l1 = sgd_eta, sgd_l1
        self.n = n_coords
        self.session, self.b_max, self.grown = 0, 0.0, 0
        self.center = np.zeros(n_coords)
        self.eps = radius
        self.full_steps = 0
        self.fresh()

    def fresh(self):
        n = self.n
        self.steps, self.q = 0, 0.0
        self.avg = np.zeros(n)
        self.V, self.B2, self.R = np.zeros((2, n)), np.full((2, n), 2.0 ** -20), np.zeros((2, n))
        self.eta_b = np.full((2, n), 2.0 ** 20)
        # BOA's rates are frozen between touches (learners/experts/boa_corners.py); the ghost
        # is a corner no gradient touched (V, B2, R, rate), the others' state when they appear
        self.ghost = [0.0, 2.0 ** -20, 0.0, 2.0 ** 20]
        self.touches, self.s2_session, self.s2_full = 0, 0.0, 0.0
        self.G, self.eta, self.var, self.range = np.zeros(n), 0.0, 0.0, 0.0
        # SGD: θ̂ - center with every step's L1 shrinkage applied to every coordinate, and as
        # of each coordinate's last touch (what the session average counts between touches)
        self.dev, self.held, self.sq = np.zeros(n), np.zeros(n), np.zeros(n)

    def weights(self, active):
        """(π+, π-) over the coordinates, 0 outside ``active``."""
        if self.sub == "eg":
            log_w = np.stack([self.eta * self.G, -self.eta * self.G])
        else:
            log_w = np.log(self.eta_b) + self.eta_b * self.R
        log_w = np.where(active, log_w, -np.inf)
        w = np.exp(log_w - log_w.max())
        return w / w.sum()

    def theta(self, active):
        if self.sub == "sgd":
            return self.center + self.dev
        pi = self.weights(active)
        return self.center + self.eps * (pi[0] - pi[1])

    def learn(self, g, active, settings, touched=None):
        """One example's gradient ``g`` (dense); ``touched``: its features (default: g != 0)."""
        n_active = active.sum()
        g_inf = np.abs(g).max() if len(g) else 0.0
        self.b_max = max(self.b_max, g_inf)
        self.q += g_inf ** 2
        self.steps += 1
        if n_active == 0:  # no corner yet: nothing to weigh, nothing to stop
            return
        if self.sub == "sgd":
            self.sgd_step(g, g != 0 if touched is None else touched)
            self.end_session_if_over(active, settings)
            return
        pi = self.weights(active)
        theta = self.center + self.eps * (pi[0] - pi[1])
        self.avg += theta - self.center
        m = float(g @ (pi[0] - pi[1]))
        if self.sub == "eg":
            self.var += self.eps ** 2 * max(float((pi[0] + pi[1]) @ g ** 2) - m * m, 0.0)
            if g_inf > 0:
                self.range = _at_least(max(self.range, 2.0 ** -20), 2 * self.eps * g_inf)
            self.G -= self.eps * g
            if self.range > 0:
                target = 1.0 / self.range
                if self.var > 0:
                    c = math.sqrt(2 * (math.sqrt(2) - 1) / (math.e - 2))
                    target = min(target, c * math.sqrt(math.log(2 * n_active) / self.var))
                eta = 2.0 ** math.floor(math.log2(target))
                if self.eta == 0 or eta < self.eta:
                    self.eta = eta
        else:
            self.boa_step(g, active, g != 0 if touched is None else touched, m)
        self.end_session_if_over(active, settings)

    def boa_step(self, g, active, touched, m):
        """Dense BOA on every corner, a corner's rate (rounded down to a power of 2^(1/16))
        fresh when its coordinate is touched and at full steps, frozen otherwise."""
        rho = self.eps * m
        r = self.eps * np.stack([m - g, m + g])
        log_n = math.log(2 * active.sum())
        self.touches += int(touched.sum())
        self.s2_session += rho * rho
        top = max(self.eta_b[:, active].max(), self.ghost[3])
        full = self.touches >= active.sum() or self.s2_session > 2 * self.s2_full or top * rho > 0.5
        if full:
            self.touches, self.s2_full = 0, self.s2_session
            self.full_steps += 1

        def step(v, b, rr, eta, r, fresh):
            v += r * r
            b = _at_least(b, abs(r))
            if fresh:
                eta = 1.0 / b if v == 0 else min(1.0 / b, math.sqrt(log_n / v))
                eta = _frozen_rate(eta)
            return v, b, rr + 0.5 * (r - eta * r * r + (b if eta * r > 0.5 else 0.0)), eta

        for s in (0, 1):
            for k in range(self.n):
                self.V[s, k], self.B2[s, k], self.R[s, k], self.eta_b[s, k] = step(
                    self.V[s, k], self.B2[s, k], self.R[s, k], self.eta_b[s, k], r[s, k],
                    full or touched[k])
        self.ghost = list(step(*self.ghost, rho, full))

    def sgd_step(self, g, touched):
        """AdaGrad (sums of ||g||∞²) with L1 towards the center on the box around it
        (learners/experts/l1_sgd.py), every coordinate shrunk at every step."""
        self.avg += np.where(touched, self.dev, self.held)
        self.sq += np.where(touched, np.abs(g).max() ** 2, 0.0)
        with np.errstate(divide="ignore"):
            eta = np.where(self.sq > 0, self.sgd_eta * self.eps / np.sqrt(self.sq), 0.0)
        step = np.clip(self.dev - eta * g, -self.eps, self.eps)
        self.dev = np.where(touched, step, self.dev)
        self.held = np.where(touched, self.dev, self.held)
        shrink = eta * self.sgd_l1 * math.sqrt(self.q / self.steps)
        self.dev = np.sign(self.dev) * np.maximum(np.abs(self.dev) - shrink, 0.0)

    def projected(self, values):
        """values - center projected onto the l1 ball of radius eps (sort-based, Duchi et al.
        2008), plus the center: SGD's sessions end in the ball."""
        dev = values - self.center
        a = np.abs(dev)
        if a.sum() <= self.eps:
            return values
        u = np.sort(a)[::-1]
        ks = np.arange(1, len(u) + 1)
        rho = ks[u - (np.cumsum(u) - self.eps) / ks > 0][-1]
        tau = (u[:rho].sum() - self.eps) / rho
        return self.center + np.sign(dev) * np.maximum(a - tau, 0.0)

    def end_session_if_over(self, active, settings):
        n_active = active.sum()
        if settings.get("sessions"):
            log_2d = math.log(2 * n_active)
            need = (settings["C"] * max(self.d0, self.grown) * 2 ** (self.session / 2)
                    * (math.sqrt(log_2d) * math.sqrt(self.q) + log_2d * self.b_scale * self.b_max)
                    / (self.alpha * self.radius))
            if self.steps >= need:
                source = (self.theta(active) if settings.get("center_last")
                          else self.center + self.avg / self.steps)
                if self.sub == "sgd":
                    source = self.projected(source)
                self.center = self.truncated(source, active)
                self.grown = max(self.grown, np.count_nonzero(self.center))
                self.session += 1
                self.eps = self.radius * 2.0 ** (-self.session / 2)
                self.fresh()

    def truncated(self, values, active):
        """The d0 largest |values| (d0 grown to the most a center kept), every one above
        regrow_floor × the median of the ``active`` ones' magnitudes (0, or a median of 0:
        none), and the next largest while the smaller ones weigh more than regrow × the next
        session's radius (regrow 0: no such limit)."""
        d0 = max(self.d0, self.grown)
        budget = (self.regrow * self.radius * 2.0 ** (-(self.session + 1) / 2) if self.regrow > 0
                  else np.inf)
        order = np.argsort(np.abs(values))
        dropped = np.searchsorted(np.cumsum(np.abs(values[order])), budget, side="right")
        if self.regrow_floor > 0 and active.any():
            level = self.regrow_floor * np.median(np.abs(values[active]))
            if level > 0:
                dropped = min(dropped, int(np.sum(np.abs(values) <= level)))
        out = values.copy()
        out[order[:min(dropped, max(len(values) - d0, 0))]] = 0.0
        return out

    def estimate(self, active, output):
        """The model: SGD's projected onto the session's ball."""
        if output == "iterate":
            estimate = self.theta(active)
        else:
            estimate = self.center + (self.avg / self.steps if self.steps else 0.0)
        if self.sub == "sgd":
            estimate = self.projected(estimate)
        return self.truncated(estimate, active) if output == "sparse" else estimate


def _dense_stream(examples):
    """The coordinates (sorted feature indices), then per example (label, importance, learn,
    dense x, active, [lo, hi]): ``active`` (the features of learned examples so far) and the
    label range are updated before the example is yielded, as olearn does before predicting."""
    coords = sorted({j for _, _, feats in examples for j, _ in feats})
    position = {j: i for i, j in enumerate(coords)}
    yield coords
    active = np.zeros(len(coords), dtype=bool)
    bounds = [0.0, 0.0]
    for label, imp, feats in examples:
        learn = label is not None and imp > 0
        x = np.zeros(len(coords))
        for j, v in feats:
            x[position[j]] += v
        if learn:
            bounds[:] = min(bounds[0], label), max(bounds[1], label)
            for j, _ in feats:
                active[position[j]] = True
        yield label, imp, learn, x, active, bounds


def experts_predictions(examples, sub="boa", d0=5, alpha=1.0, radius=1.0, final=None,
                        output="iterate", regrow=0.0, regrow_floor=50.0, sgd_eta=1.0,
                        sgd_l1=0.0, counts=None, **settings):
    """EG± / BOA / SAEW (algorithms.md §2-4, olearn's choices in learners/experts/saew.py) in plain
    numpy, squared loss: progressive predictions of (label or None, importance, [(index, value)])
    examples. Every corner is updated at every step, including those of features not seen yet.
    ``final`` (a dict) receives the exported θ by feature index, ``counts`` (a dict) BOA's
    number of full steps. ``settings``: sessions, C, center_last."""
    stream = _dense_stream(examples)
    coords = next(stream)
    inst = _Instance(len(coords), sub, d0, alpha, radius, regrow=regrow,
                     regrow_floor=regrow_floor, sgd_eta=sgd_eta,
                     sgd_l1=sgd_l1)
    active = np.zeros(len(coords), dtype=bool)
    out = []
    for label, imp, learn, x, active, (lo, hi) in stream:
        raw = float(inst.theta(active) @ x) if active.any() else 0.0
        p = min(max(raw, lo), hi)
        out.append(p)
        if learn:
            inst.learn(imp * 2 * (p - label) * x, active, settings, touched=x != 0)
    if final is not None:
        theta = inst.estimate(active, output)
        final.update({j: theta[i] for i, j in enumerate(coords) if active[i]})
    if counts is not None:
        counts["full_steps"] = inst.full_steps
    return out


def _boa_step(V, B2, R, regrets):
    """One BOA step over general experts; returns the normalized weights."""
    n = len(regrets)
    eta = np.empty(n)
    for j, r in enumerate(regrets):
        V[j] += r * r
        B2[j] = _at_least(B2[j], abs(r))
        eta[j] = min(1.0 / B2[j], math.sqrt(math.log(max(n, 2)) / V[j])) if V[j] > 0 else 1 / B2[j]
        R[j] += 0.5 * (r - eta[j] * r * r + (B2[j] if eta[j] * r > 0.5 else 0.0))
    log_w = np.log(eta) + eta * R
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


def calibrated_predictions(examples, grid, sub="boa", C=2.0, center_last=False, sgd_eta=1.0,
                           sgd_l1=0.0):
    """SAEW calibrated (Algorithm 3 as learners/experts/saew.py reads it), squared loss: BOA over
    SAEW instances, one per ``grid`` row (d0, alpha, radius, B scale, join), which learn throughout
    from their own clipped forecasts; the BOA restarts at learned examples 1, 2, 4, 8, ...,
    2^j over the instances whose join is at most j."""
    stream = _dense_stream(examples)
    coords = next(stream)
    settings = {"sessions": True, "C": C, "center_last": center_last}
    insts = [_Instance(len(coords), sub, int(d0), a, u, b, sgd_eta=sgd_eta, sgd_l1=sgd_l1)
             for d0, a, u, b, _ in grid]
    join = grid[:, 4]
    t = 0
    out = []

    def restart(j):
        mixed = join <= j
        k = int(mixed.sum())
        return mixed, np.zeros(k), np.full(k, 2.0 ** -20), np.zeros(k), np.full(k, 1.0 / k)

    mixed, V, B2, R, pi = restart(0)
    for label, imp, learn, x, active, (lo, hi) in stream:
        if learn and (t + 1) & t == 0:
            mixed, V, B2, R, pi = restart(int(np.log2(t + 1)))
        forecasts = np.array([min(max(float(i.theta(active) @ x), lo), hi) if active.any() else 0.0
                              for i in insts])
        p = min(max(float(pi @ forecasts[mixed]), lo), hi)
        out.append(p)
        if learn:
            t += 1
            for inst, f in zip(insts, forecasts):
                inst.learn(imp * 2 * (f - label) * x, active, settings, touched=x != 0)
            pi = _boa_step(V, B2, R, imp * 2 * (p - label) * (p - forecasts[mixed]))
    return out


def ftrl_predictions(examples, rule, alpha, beta, l1=0.0, l2=0.0):
    """VW's --ftrl (``rule`` "ftrl"), --pistol or --coin in plain Python on float32 scalars,
    squared loss, as docs/ftrl.md states them: each example's (shown prediction, raw score).

    ``examples`` as for :func:`gd_predictions`. The weight of each coordinate is ``w`` (VW's
    slot 0, what prediction without learning reads); the rest of its state is ``state``.
    """
    f = np.float32
    alpha, beta, l1, l2 = f(alpha), f(beta), f(l1), f(l2)
    w, state = {}, {}
    lo = hi = 0.0
    norm = total = 0.0  # --coin's N and T (double)
    out = []

    def dot(feats):  # a NaN score is forced to 0, as VW's
        s = f(0)
        for j, x in feats:
            s = f(s + f(w.get(j, f(0)) * f(x)))
        return 0.0 if math.isnan(s) else float(s)

    def bet(st, a):
        theta, big_g, _, wealth, lip = st
        la = f(lip * a)
        return f(f(f(alpha + wealth) / f(la * f(la + big_g))) * theta) if la > 0 else f(0)

    with np.errstate(all="ignore"):  # PiSTOL's exp overflows by design (NaN predictions: 0)
        for label, imp, feats in examples:
            learn = label is not None and imp > 0
            if not learn:
                raw = dot(feats)
                out.append((min(max(raw, lo), hi), raw))
                continue
            first = min(max(dot(feats), lo), hi)
            lo, hi = min(lo, label), max(hi, label)
            if rule == "ftrl":
                raw = dot(feats)
            elif rule == "pistol":
                s = f(0)
                for j, x in feats:
                    st = state.setdefault(j, [f(0)] * 3)  # θ, G, a
                    st[2] = max(st[2], f(abs(x)))
                    tau = f(f(1) / f(f(alpha * st[2]) * f(st[1] + st[2])))
                    w[j] = f(f(f(f(np.sqrt(st[1]) * beta) * st[0])
                               * np.exp(f(f(f(st[0] * st[0]) / f(2)) * tau))) * tau)
                    s = f(s + f(w[j] * f(x)))
                raw = float(s)
            else:
                s, nu = f(0), f(0)
                for j, x in feats:
                    st = state.setdefault(j, [f(0)] * 5)  # θ, G, a, wealth, L
                    a = max(st[2], f(abs(x)))
                    s = f(s + f(bet(st, a) * f(x)))
                    if a > 0:
                        nu = f(nu + f(f(f(x) / a) * f(f(x) / a)))
                norm += imp * float(nu)
                total += imp
                raw = float(f(s / f((norm + 1e-6) / total)))
            if math.isnan(raw):
                raw = 0.0
            p = min(max(raw, lo), hi)
            out.append((first if rule in ("ftrl", "coin") else p, raw))
            d = f(2.0 * (p - label) * imp)
            for j, x in feats:
                g = f(d * f(x))
                if rule == "ftrl":
                    z, n = state.get(j, (f(0), f(0)))
                    n_new = f(n + f(g * g))
                    root = np.sqrt(n_new)
                    sigma = f(f(root - np.sqrt(n)) / alpha)
                    z = f(z + f(g - f(sigma * w.get(j, f(0)))))
                    state[j] = (z, n_new)
                    step = f(f(1) / f(l2 + f(f(beta + root) / alpha)))  # VW's rounding
                    w[j] = f(0) if abs(z) <= l1 else f(f(step * np.sign(z)) * f(l1 - abs(z)))
                elif rule == "pistol":
                    st = state[j]
                    st[0], st[1] = f(st[0] - g), f(st[1] + f(abs(g)))
                else:
                    st = state[j]
                    st[2] = max(st[2], f(abs(x)))
                    if abs(d) > st[4]:
                        st[4] = max(f(abs(d)), beta)
                    b = bet(st, st[2])
                    st[0], st[1], st[3] = f(st[0] - g), f(st[1] + f(abs(g))), f(st[3] - f(g * b))
                    w[j] = f(b / f((norm + 1e-6) / total))
    return out


def freegrad_predictions(examples, epsilon=1.0, lipschitz=0.0, restart=False, project=False,
                         radius=None):
    """VW's --freegrad (freegrad.cc) in plain Python on float32 scalars, squared loss: each
    example's (prediction, raw score). ``examples`` as for :func:`gd_predictions`; ``radius``
    None: the adaptive radius."""
    f = np.float32
    eps, lip = f(epsilon), f(lipschitz)
    w, state = {}, {}  # state: [G, V, h1, ht, S]
    grad_norms, top = f(1), f(0)
    lo = hi = 0.0
    out = []

    def bet(j):
        big_g, v, h1, ht, _ = state.get(j, [f(0)] * 5)
        if not h1 > 0:
            return f(0)
        a = abs(big_g)
        return f(f(f(f(f(-big_g * eps) * f(f(2) * v + f(ht * a))) * f(h1 * h1))
                   / f(f(f(2) * f(f(v + f(ht * a)) ** 2)) * np.sqrt(v)))
                 * np.exp(f(f(a * a) / f(f(f(2) * v) + f(f(2) * f(ht * a))))))

    def ball():
        return f(radius) if radius is not None else f(eps * np.sqrt(grad_norms))

    with np.errstate(all="ignore"):
        for label, imp, feats in examples:
            if not (label is not None and imp > 0):
                raw = 0.0
                for j, x in feats:
                    raw = f(raw + f(w.get(j, f(0)) * f(x)))
                raw = 0.0 if math.isnan(raw) else float(raw)
                out.append((min(max(raw, lo), hi), raw))
                continue
            lo, hi = min(lo, label), max(hi, label)
            bets = [bet(j) for j, _ in feats]
            s, sq = f(0), f(0)
            for b, (_, x) in zip(bets, feats):
                sq = f(sq + f(b * b))
                s = f(s + f(b * f(x)))
            norm = np.sqrt(sq)
            if project and norm > ball():
                s = f(s * f(ball() / norm))
            raw = 0.0 if math.isnan(s) else float(s)
            p = min(max(raw, lo), hi)
            out.append((p, raw))
            d = f(2.0 * (p - label))
            weight = f(imp)
            dot = f(0)
            for b, (_, x) in zip(bets, feats):
                dot = f(dot + f(f(d * f(x)) * b))
            tilt = project and norm > ball() and dot < 0
            clipped_sq = f(0)
            for j, x in feats:
                st = state.setdefault(j, [f(0)] * 5)
                h1, ht = st[2], st[3]
                if h1 > 0:
                    w[j] = bet(j)
                g = f(d * f(x))
                if tilt:
                    g = f(g - f(f(dot * w.get(j, f(0))) / f(norm * norm)))
                if g == 0:
                    continue
                c = g
                if h1 == 0:
                    st[2] = st[3] = abs(g) if lip == 0 else lip
                    st[1] = f(st[1] + f(weight * f(g * g)))
                elif abs(g) > ht:
                    c = f(c * f(ht / abs(g)))
                    st[3] = abs(g)
                clipped_sq = f(clipped_sq + f(c * c))
                step_g = f(c + f(f(weight - 1) * g))
                step_v = f(f(c * c) + f(f(weight - 1) * f(g * g)))
                if restart and f(st[3] / st[2]) > f(st[4] + 2):
                    st[2], st[0], st[1] = st[3], step_g, step_v
                else:
                    st[0], st[1] = f(st[0] + step_g), f(st[1] + step_v)
                if ht > 0:
                    st[4] = f(st[4] + f(f(abs(c) / ht) + f(f(f(weight - 1) * abs(g)) / st[3])))
            clipped_norm = np.sqrt(clipped_sq)
            top = max(top, clipped_norm)
            if top > 0:
                grad_norms = f(grad_norms + f(f(weight * clipped_norm) / top))
    return out


def svrg_predictions(examples, passes, stage_size=1, eta=0.5):
    """VW's --svrg (svrg.cc) in plain Python on float32 scalars, squared loss, over ``passes``
    passes of ``examples`` (as for :func:`gd_predictions`): each example's (prediction, raw
    score), pass after pass."""
    f = np.float32
    w, stable, grad = {}, {}, {}
    count = 0
    lo = hi = 0.0
    out = []

    def dot(weights, feats, initial=0.0):
        s = f(initial)
        for j, x in feats:
            s = f(s + f(f(x) * weights.get(j, f(0))))
        return 0.0 if math.isnan(s) else float(s)

    with np.errstate(all="ignore"):
        for now in range(passes):
            exact = now % (stage_size + 1) == 0
            if exact:  # the stage's stable point
                stable, grad, count = dict(w), {}, 0
            for label, imp, feats in examples:
                learn = label is not None and imp > 0
                if learn:
                    lo, hi = min(lo, label), max(hi, label)
                raw = dot(w, feats)
                p = min(max(raw, lo), hi)
                out.append((p, raw))
                if not learn:
                    continue
                p_stable = min(max(dot(stable, feats), lo), hi)
                g_stable = f(f(2.0 * (p_stable - label)) * f(imp))
                if exact:
                    for j, x in feats:
                        grad[j] = f(grad.get(j, f(0)) + f(g_stable * f(x)))
                    count += 1
                    continue
                g = f(f(2.0 * (p - label)) * f(imp))
                for j, x in feats:
                    step = f(f(f(g - g_stable) * f(x)) + f(grad.get(j, f(0)) / f(count)))
                    w[j] = f(w.get(j, f(0)) - f(f(eta) * step))
    return out


def parse_csv(text: bytes, sep: bytes = b",", bits: int = 18, seed: int = 0,
              constant: bool = True, scales: dict | None = None):
    """A well-formed CSV file (header line first; cells plain or fully quoted) → per example
    (label, importance, initial, tag, [(index, value, ns)]), by Python's csv module and VW's
    column rules: ``_label``/``_tag`` columns, ``ns|name`` features grouped by namespace in
    VW's map order (a quoted cell or a non-number is a string feature, value 1)."""
    import csv

    from olearn.data.csv_header import namespace_order

    mask = (1 << bits) - 1
    scales = scales or {}
    rows = list(csv.reader(text.decode("latin-1").splitlines(), delimiter=sep.decode(),
                           strict=True))
    quoted = [[cell.startswith(b'"') for cell in _raw_cells(line, sep)]
              for line in text.split(b"\n")[: len(rows)]]
    header = [name.encode("latin-1") for name in rows[0]]
    columns = {}  # ns → [(column, feature name)]
    for k, name in enumerate(header):
        if name not in (b"_label", b"_tag"):
            ns, _, feature = name.rpartition(b"|")
            columns.setdefault(ns, []).append((k, feature))
    examples = []
    for row, quotes in zip(rows[1:], quoted[1:]):
        cells = [cell.encode("latin-1") for cell in row]
        label_cell = cells[header.index(b"_label")] if b"_label" in header else b""
        numbers = [float(t) for t in label_cell.split(b" ") if t]
        label = numbers[0] if numbers else math.nan
        importance = numbers[1] if len(numbers) > 1 else 1.0
        initial = numbers[2] if len(numbers) > 2 else 0.0
        tag = cells[header.index(b"_tag")] if b"_tag" in header else b""
        tag = tag[1:] if tag.startswith(b"'") else tag
        features, ranks, empty = [], [], True
        for ns in namespace_order(list(columns)):
            ns_index = ns[0] if ns else 32
            ns_hash = vw_hash(ns, seed) if ns else 0
            anon = 0
            for k, name in columns[ns]:
                cell = cells[k]
                if not cell and not quotes[k]:
                    continue
                empty = False
                try:
                    value = float(cell) if not quotes[k] else math.nan
                except ValueError:
                    value = math.nan
                if math.isnan(value):
                    index, value = vw_hash(cell, vw_hash(name, ns_hash)), 1.0
                elif name:
                    index, value = vw_hash(name, ns_hash), value * scales.get(ns, 1.0)
                else:
                    index, value, anon = ns_hash + anon, value * scales.get(ns, 1.0), anon + 1
                if value != 0:
                    features.append((index & mask, value, ns_index))
                    ranks += [] if ns_index in ranks else [ns_index]
        if empty:
            continue
        features.sort(key=lambda f: ranks.index(f[2]))  # stable: VW's per-index grouping
        if constant:
            features.append((CONSTANT & mask, 1.0, 128))
        examples.append((label, importance, initial, tag or None, features))
    return examples


def _raw_cells(line: bytes, sep: bytes) -> list[bytes]:
    """A well-formed CSV line's raw cells (a quoted cell's separators are inside quotes)."""
    cells, cell, inside = [], b"", False
    for c in line.rstrip(b"\r"):
        byte = bytes([c])
        if byte == b'"':
            inside = not inside
        if byte == sep and not inside:
            cells.append(cell)
            cell = b""
        else:
            cell += byte
    return cells + [cell]


def ldf_predictions(examples, mode="m", adaptive=True, normalized=True, invariant=True, eta=0.5,
                    power_t=0.5, t0=0.0):
    """VW's --csoaa_ldf (``mode`` "m" or "mc") and --wap_ldf ("wap") over gd in plain Python
    (olearn/reductions/ldf.py), squared loss: each multi-line example's raw scores and
    predicted class.

    ``examples``: lists of actions (class, cost, features), shared features already merged.
    Every action is predicted first; the prediction is the class of the lowest score (the
    first of equal ones). Then each action learns in order, with one weight table and one set
    of normalizer sums, its cost ("m"), or -1 with importance max - min when cheapest and +1
    with importance cost - min otherwise ("mc"); "wap" learns every pair (j < k) of different
    weighted-all-pairs values: j's features less k's, -1 when j is cheaper, importance the
    values' difference. t stays at t0 (VW's multi-line learners do not advance it).
    """
    gd = GradientDescent(adaptive, normalized, invariant, eta, power_t, t0)
    sums = gd.fresh_sums()
    lo = hi = 0.0
    out = []

    def learn(feats, y, imp):
        nonlocal lo, hi
        lo, hi = min(lo, y), max(hi, y)
        if imp > 0:
            gd.update(feats, min(max(gd.predict(feats), lo), hi), y, imp, t0, sums)

    for actions in examples:
        raws = [gd.predict(feats) for _, _, feats in actions]
        best = min(range(len(actions)), key=lambda j: (raws[j], j))
        out.append((raws, actions[best][0]))
        costs = [cost for _, cost, _ in actions]
        if mode == "wap":
            order = sorted(costs)
            value = {0: 0.0}
            for i in range(1, len(order)):
                value[i] = value[i - 1] + (order[i] - order[i - 1]) / i
            values = [value[max(i for i in range(len(order)) if order[i] == c)] for c in costs]
            for j in range(len(actions)):
                for k in range(j + 1, len(actions)):
                    diff = abs(values[k] - values[j])
                    if diff >= 1e-6:
                        feats = actions[j][2] + [(i, -x) for i, x in actions[k][2]]
                        learn(feats, -1.0 if costs[j] < costs[k] else 1.0, diff)
            continue
        for _, cost, feats in actions:
            if mode == "m":
                learn(feats, cost, 1.0)
            elif cost <= min(costs):
                learn(feats, -1.0, max(costs) - min(costs))
            else:
                learn(feats, 1.0, cost - min(costs))
    return out
def bfgs_first_pass(examples, weights, bits):
    """--bfgs's first pass (learners/bfgs.py) with the squared loss from ``weights``: per
    coordinate the summed gradient and preconditioner (Σ ℓ''·i·x²), the summed loss, the
    learned examples' predictions (clipped to the label range, which each label widens first)
    and their importance. Float32 where VW's are."""
    f32 = np.float32
    g = np.zeros(1 << bits, dtype=np.float32)
    cond = np.zeros(1 << bits, dtype=np.float32)
    low = high = 0.0
    loss = importance = 0.0
    stored = []
    for y, imp, features in examples:
        if y is None or imp == 0:
            continue
        low, high = min(low, y), max(high, y)
        raw = f32(0.0)
        for j, x in features:
            raw += weights[j] * f32(x)
        p = min(max(float(raw), low), high)
        d = f32(2.0 * (p - y)) * f32(imp)
        second = f32(2.0 if low <= f32(p) <= high else 0.0) * f32(imp)
        for j, x in features:
            g[j] += d * f32(x)
            cond[j] += second * f32(x) * f32(x)
        loss += float(f32(f32((p - y) * (p - y)) * f32(imp)))
        importance += imp
        stored.append(p)
    return g, cond, loss, np.array(stored, dtype=np.float32), importance


def bfgs_curvature(examples, direction, stored):
    """--bfgs's curvature pass (squared loss, every stored prediction inside the range):
    Σ (d·x)²·ℓ''·i over the learned examples."""
    total = 0.0
    k = 0
    for y, imp, features in examples:
        if y is None or imp == 0:
            continue
        along = np.float32(0.0)
        for j, x in features:
            along += direction[j] * np.float32(x)
        total += float(along) * float(along) * 2.0 * imp
        k += 1
    assert k == len(stored)
    return total


def mf_draw_slots(row: int, rank: int) -> list:
    """VW's gd_mf start of one coordinate: 0.1 times the draws of its 64-bit generator seeded
    with row·S (S: the power of two ≥ 2·rank + 1), the state stepped by one more between
    draws (each draw: bits 25..47 as a float32's mantissa in [1, 2), minus 1)."""
    stride = 1
    while stride < 2 * rank + 1:
        stride *= 2
    state, out = row * stride, []
    for _ in range(2 * rank + 1):
        state, unit = vw_draw(state)
        out.append(np.float32(0.1) * unit)
        state += 1
    return out


def vw_draw(state: int) -> tuple:
    """VW's merand48: the generator's next state and its float32 draw in [0, 1) (bits 25..47
    of the state as the mantissa of a float in [1, 2), minus 1)."""
    state = (0xEECE66D5DEECE66D * state + 2147483647) % (1 << 64)
    bits = ((state >> 25) & 0x7FFFFF) | 0x3F800000
    return state, np.frombuffer(np.uint32(bits).tobytes(), dtype=np.float32)[0] - np.float32(1)


def subsample_order(classes: int, seed: int) -> list:
    """VW's --oaa_subsample order: the identity, position i swapped with i + ⌊draw·(K − i)⌋."""
    order, state = list(range(classes)), seed
    for i in range(classes):
        state, unit = vw_draw(state)
        j = int(unit * np.float32(classes - i)) + i
        order[i], order[j] = order[j], order[i]
    return order


def oaa_subsample_predictions(examples, classes, bits, negatives, seed=0):
    """VW's --oaa --oaa_subsample over gd (default rule) in plain Python, squared loss,
    1-based labels: each example's class as --oaa predicts it (VW shows that one), then the
    label's class learns +1 and the order's next ``negatives`` other classes -1 with importance
    times K/N, each predicted with the range after its label joined."""
    mask = (1 << bits) - 1
    width = feature_width(classes)
    gd = GradientDescent(True, True, True, 0.5)
    sums = [gd.fresh_sums() for _ in range(classes)]
    order, position = subsample_order(classes, seed), 0
    lo = hi = 0.0
    t = 0.0
    out = []
    for label, imp, feats in examples:
        per_class = [[((j * width + k) & mask, x) for j, x in feats] for k in range(classes)]
        scores = [min(max(gd.predict(f), lo), hi) for f in per_class]
        out.append(max(range(classes), key=lambda k: (scores[k], -k)) + 1)
        if label is None or imp == 0:  # (VW moves through its order for importance 0 too)
            t += 0.0 if label is None else imp
            continue
        weight = float(np.float32(imp) * (np.float32(classes) / np.float32(negatives)))
        learned = [(int(label) - 1, 1.0, imp)]
        while len(learned) <= negatives:
            c = order[position]
            position = (position + 1) % classes
            if c != label - 1:
                learned.append((c, -1.0, weight))
        for c, y, importance in learned:
            lo, hi = min(lo, y), max(hi, y)
            p = min(max(gd.predict(per_class[c]), lo), hi)
            gd.update(per_class[c], p, y, importance, t, sums[c])
        t += imp
    return out


def mf_predictions(examples, rank, bits, eta=10.0, power_t=0.5, l2=0.0, classic=False,
                   pair=None, t0=1.0):
    """VW's --rank (gd_mf) in plain Python on float32 scalars, squared or classic loss: each
    example's (clipped prediction, raw score). ``examples``: (label or None, importance,
    [(index, value, namespace)]); ``pair``: the -q pair's two namespace codes, or None."""
    f = np.float32
    slots = {}
    lo = hi = 0.0
    t = t0
    out = []

    def w(j):
        return slots.setdefault(j, mf_draw_slots(j, rank))

    def dot(feats, column, ns):
        s = f(0)
        for j, x, n in feats:
            if n == ns:
                s = f(s + f(w(j)[column] * f(x)))
        return s

    for label, imp, feats in examples:
        p = f(0)
        for j, x, _ in feats:
            p = f(p + f(w(j)[0] * f(x)))
        paired = pair is not None and all(any(n == side for _, _, n in feats) for side in pair)
        if paired:
            for k in range(1, rank + 1):
                p = f(p + f(dot(feats, k, pair[0]) * dot(feats, k + rank, pair[1])))
        raw = float(p)
        learn = label is not None and imp > 0
        if learn:
            lo, hi = min(lo, label), max(hi, label)
        clipped = min(max(raw, lo), hi)
        out.append((clipped, raw))
        if learn:
            eta_t = f(f(f(f(eta) / f(f(f(t) + f(imp)) ** f(power_t))) / f(3)) * f(imp))
            step = f(2.0 * (label - clipped) * float(eta_t))
            if not classic and float(eta_t) >= 1e-6:
                step = f((label - clipped) * (1.0 - math.exp(-2.0 * float(eta_t))))
            reg = f(eta_t * f(l2))
            for j, x, _ in feats:
                w(j)[0] = f(w(j)[0] + f(f(step * f(x)) - f(reg * w(j)[0])))
            if paired:
                for k in range(1, rank + 1):
                    left, right = dot(feats, k, pair[0]), dot(feats, k + rank, pair[1])
                    for column, ns, other in ((k, pair[0], right), (k + rank, pair[1], left)):
                        g = f(step * other)
                        for j, x, n in feats:
                            if n == ns:
                                w(j)[column] = f(w(j)[column] + f(f(g * f(x))
                                                                  - f(reg * w(j)[column])))
        if label is not None:
            t += imp
    return out


def vw_fasttanh(p: float) -> float:
    """VW's nn.cc fasttanh, its float32 steps one by one (numpy float32 scalars) and the power
    of two read from its bits with struct."""
    import struct
    f = np.float32
    x = f(1.442695040) * (f(-2.0) * f(p))
    offset = f(1.0) if x < 0 else f(0.0)
    clipp = f(-126.0) if x < -126 else x
    z = clipp - f(int(clipp)) + offset
    bits = int(f(1 << 23) * (clipp + f(121.2740575) + f(27.7280233) / (f(4.84252568) - z)
                             - f(1.49012907) * z))
    power = f(struct.unpack("<f", struct.pack("<I", bits))[0])
    return float(f(-1.0) + f(2.0) / (f(1.0) + power))


def oja_sketch_start(rows: int, m: int, seed: int) -> np.ndarray:
    """VW's random start of --OjaNewton's sketch, plainly: per row, per direction, Box-Muller
    of two draws (the first redrawn with the second while it is 0), then the directions
    orthonormalized by numpy's QR (signs made positive on the diagonal of R, as Gram-Schmidt
    gives). Returns rows × m, float64."""
    drawn = np.zeros((rows, m))
    state = seed
    for j in range(rows):
        for i in range(m):
            r1 = np.float32(0)
            while r1 == 0:
                state, r1 = vw_draw(state)
                state, r2 = vw_draw(state)
            drawn[j, i] = math.sqrt(-2 * math.log(r1)) * math.cos(2 * math.pi * r2)
    q, r = np.linalg.qr(drawn)
    return q * np.sign(np.diag(r))


def oja_newton_predictions(examples, sketch, epoch=1, alpha=1.0, rate_count=2.0,
                           normalize=True):
    """VW's --OjaNewton (oja_newton.cc) as matrix algebra in float64, squared loss, from the
    starting ``sketch`` (rows × (m + 1): the directions, then the normalizers): each example's
    raw score. ``examples`` as for :func:`gd_predictions`, with distinct indices per example.
    A is kept lower triangular and K-orthonormal by classical Gram-Schmidt in K's inner
    product after each epoch."""
    Z = sketch[:, :-1].astype(np.float64)
    norms = sketch[:, -1].astype(np.float64)
    m = Z.shape[1]
    w = np.zeros(len(Z))
    A, K = np.eye(m), np.eye(m)
    ev, b = np.zeros(m), np.zeros(m)
    t, held = 1, []
    lo = hi = 0.0
    out = []

    def scaled(idx, x):
        return x / np.sqrt(norms[idx]) if normalize else x

    for label, imp, feats in examples:
        idx = np.array([j for j, _ in feats], dtype=np.int64)
        x = np.array([v for _, v in feats], dtype=np.float64)
        raw = float(scaled(idx, x) @ (w[idx] + Z[idx] @ b))
        out.append(raw)
        if label is None:
            continue
        lo, hi = min(lo, label), max(hi, label)
        g = (min(max(raw, lo), hi) - label) * imp  # ℓ'/2 of the squared loss, times i
        if normalize:
            norms[idx] += x * x * g * g
        held.append((idx, x, g / 2))
        if len(held) == epoch:
            for hidx, hx, c in held:
                xs = scaled(hidx, hx)
                zx = Z[hidx].T @ xs
                gamma = min(rate_count / t, 1.0)
                azx = A @ zx
                ev = gamma * t * (azx * c) ** 2 + (0 if t == 1 else (1 - gamma) * t * ev / (t - 1))
                delta = gamma * c * zx
                K += c * (np.outer(delta, zx) + np.outer(zx, delta)) + (
                    xs @ xs * c * c * np.outer(delta, delta))
                w[hidx] -= c * (delta @ b) * xs
                Z[hidx] += c * np.outer(xs, delta)
                t += 1
            for i in range(m):
                a = A[i].copy()
                for k in range(i):
                    A[i] -= (a @ K @ A[k]) * A[k]
                A[i] /= np.sqrt(A[i] @ K @ A[i])
            held = []
        xs = scaled(idx, x)
        w[idx] -= g * xs / alpha
        azx = A @ (Z[idx].T @ xs)
        b += g * A.T @ (ev * azx / (alpha * (alpha + ev)))
        if np.abs(np.triu(K)).max() >= 1e7:
            K = A @ K @ A.T
            w += Z @ b
            b[:] = 0
            Z = Z @ A.T
            A = np.eye(m)
    return out


def _low_rank_copy(gd, feats, pairs, width, field_aware, which, learn, mask, pushed):
    """One copy of an example with VW's low-rank features (reductions/lrq.py), in plain
    Python: each namespace's features widened to h·W, then the products it receives as the
    right side of each pair; a left factor at 0 starts, when learning, at VW's draw of its
    index (times 0.5/√k for --lrqfa). ``pushed`` keeps each namespace's indices received so
    far in this example: --lrqfa's j-th product takes the j-th of them (VW's stale indices)."""
    order = list(dict.fromkeys(ns for _, _, ns in feats))
    rows = {ns: [(h, x) for h, x, n in feats if n == ns] for ns in order}
    received = {ns: [] for ns in order}
    for a, b, k, field_a, field_b in pairs:
        (left, left_field), (right, right_field) = (
            ((a, field_a), (b, field_b)) if (which + field_aware) % 2 == 0
            else ((b, field_b), (a, field_a)))
        for h, x in rows.get(left, []):
            for n in range(1, k + 1):
                slot = h * width + right_field * k + n
                w = np.float32(gd.w.get(slot & mask, 0.0))
                if learn and w == 0:
                    w = vw_draw(slot << 2)[1]
                    if field_aware:
                        w = np.float32(w * np.float32(0.5)) / np.float32(np.sqrt(k))
                    gd.w[slot & mask] = float(w)
                for hr, xr in rows.get(right, []):
                    received[right].append(((hr * width + left_field * k + n) & mask,
                                            np.float32(w * np.float32(x)) * np.float32(xr)))
    copy = []
    for ns in order:
        copy += [((h * width) & mask, x) for h, x in rows[ns]]
        got = received[ns]
        if field_aware:
            log = pushed.setdefault(ns, [])
            log += [j for j, _ in got]
            got = [(log[i], v) for i, (_, v) in enumerate(got)]
        copy += [(j, float(v)) for j, v in got]
    return copy


def lrq_predictions(examples, pairs, width, field_aware, bits, eta):
    """VW's --lrq (``field_aware`` 0) or --lrqfa over its default gd in plain Python, squared
    loss: progressive predictions. ``examples``: (label or None, importance,
    [(index, value, namespace)], each namespace's features together); ``pairs``: rows
    (a, b, k, a's field, b's field). A learned example is predicted and learned twice, the
    sides swapped the second time (by the example's number); its first prediction is
    shown."""
    gd = GradientDescent(True, True, True, eta)
    sums = gd.fresh_sums()
    mask = (1 << bits) - 1
    lo = hi = 0.0
    out = []
    for counter, (label, imp, feats) in enumerate(examples):
        learn = label is not None and imp > 0
        if learn:
            lo, hi = min(lo, label), max(hi, label)
        pushed = {}
        for side in range(2 if learn else 1):
            copy = _low_rank_copy(gd, feats, pairs, width, field_aware,
                                  (counter if learn else 0) + side, learn, mask, pushed)
            p = min(max(gd.predict(copy), lo), hi)
            if side == 0:
                out.append(p)
            if learn:
                gd.update(copy, p, label, imp, 0.0, sums)
    return out
