"""--ngram and --skips (olearn/features/ngrams.py). Indices, names, feature counts and losses
against VW's: tests/test_vw_oracle.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn import Learner, OptionError
from olearn.features.ngrams import GRAM_MULTIPLIER, Grams, _patterns, add_grams
from olearn.kernel import layouts
from olearn.options.config import Config

MASK = (1 << 18) - 1


def reference_grams(offsets, index, namespace, ngram, skips, has_constant, mask):
    """Every example's features with each namespace run's grams after it, one gram at a time:
    sizes 2..N, skip patterns with at most K skipped in all, first positions in order."""
    out_off, out = [0], []
    for e in range(len(offsets) - 1):
        lo, hi = int(offsets[e]), int(offsets[e + 1]) - has_constant
        runs = []
        for k in range(lo, hi):
            if runs and runs[-1][0] == namespace[k]:
                runs[-1][1].append(k)
            else:
                runs.append((namespace[k], [k]))
        for b, members in runs:
            out += [(int(index[k]), int(b)) for k in members]
            for n in range(2, ngram[b] + 1):
                for pattern in _patterns(n, skips[b]):
                    for i in range(len(members) - pattern[-1]):
                        h = 0
                        for j, offset in enumerate(pattern):
                            part = int(index[members[i + offset]])
                            h = part if j == 0 else (h * GRAM_MULTIPLIER + part) % (1 << 64)
                        out.append((h & mask, int(b)))
        if has_constant:
            out.append((int(index[hi]), int(namespace[hi])))
        out_off.append(len(out))
    return out_off, out


def _grams(ngram=(), skips=()) -> Grams | None:
    return Grams.of(Config(ngram=list(ngram), skips=list(skips)))


@st.composite
def batches(draw):
    examples = draw(st.lists(st.lists(st.sampled_from([32, 97, 98]), max_size=9), max_size=5))
    has_constant = draw(st.booleans())
    namespace, offsets = [], [0]
    for runs in examples:
        namespace += sorted(runs, key=runs.index)  # each namespace's features contiguous
        if has_constant:
            namespace.append(128)
        offsets.append(len(namespace))
    nf = len(namespace)
    index = draw(st.lists(st.integers(0, MASK), min_size=nf, max_size=nf))
    return (np.array(offsets, dtype=np.int64), np.array(index, dtype=np.uint32),
            np.array(namespace, dtype=np.uint8), has_constant)


@settings(max_examples=300)
@given(batches(), st.sampled_from([["2"], ["3"], ["a3", "b2"], ["4"]]),
       st.sampled_from([[], ["1"], ["a2"], ["2", "b0"]]))
def test_grams_are_the_references(batch, ngram, skips):
    offsets, index, namespace, has_constant = batch
    grams = _grams(ngram, skips)
    value = np.ones(len(index), dtype=np.float32)
    audit = np.zeros((0, 6), dtype=np.int64)
    out_off, out_idx, out_val, out_ns, _, parts = add_grams(
        offsets, index, value, namespace, audit, grams.start, grams.patterns, has_constant, MASK)
    want_off, want = reference_grams(offsets, index, namespace, _counts(ngram), _counts(skips),
                                     has_constant, MASK)
    assert out_off.tolist() == want_off
    assert list(zip(out_idx.tolist(), out_ns.tolist())) == want
    assert (out_val == 1).all() and parts.shape[0] == 0


def _counts(values: list[str]) -> dict:
    counts = {b: 0 for b in (32, 97, 98, 128)}
    for text in values:
        if text[0].isdigit():
            counts = dict.fromkeys(counts, int(text))
        else:
            counts[ord(text[0])] = int(text[1:])
    return counts


def test_skip_patterns_in_vws_order():
    assert _patterns(3, 2) == [(0, 1, 2), (0, 1, 3), (0, 1, 4), (0, 2, 3), (0, 2, 4), (0, 3, 4)]
    assert _patterns(2, 0) == [(0, 1)]


def test_later_ngram_options_win():
    grams = _grams(["b3", "2"])
    sizes = {int(grams.patterns[r, 0]) for r in range(grams.start[98], grams.start[99])}
    assert sizes == {2}


@pytest.mark.parametrize("ngram, skips", [(["1"], []), (["a1"], []), (["0"], [])])
def test_ngram_below_two_adds_nothing(ngram, skips):
    assert _grams(ngram, skips) is None


@pytest.mark.parametrize("options, message", [({"skips": ["1"]}, "--skips needs --ngram"),
                                               ({"ngram": ["x"]}, "--ngram 'x'"),
                                               ({"ngram": ["a-2"]}, "--ngram 'a-2'"),
                                               ({"ngram": ["100000"]}, "gram patterns"),
                                               ({"ngram": ["30"], "skips": ["9"]},
                                                "gram patterns")])
def test_malformed_gram_options_are_option_errors(options, message):
    with pytest.raises(OptionError, match=message):
        Learner(**options)


@pytest.mark.parametrize("broken", ["start", "size", "order"])
def test_add_grams_refuses_a_malformed_table(broken):
    grams = _grams(["3"])
    start, patterns = grams.start.copy(), grams.patterns.copy()
    if broken == "start":
        start[-1] = len(patterns) + 1
    elif broken == "size":
        patterns[0, 0] = patterns.shape[1]
    else:
        patterns[0, 2] = 0
    with pytest.raises(ValueError, match="add_grams"):
        add_grams(np.array([0, 2]), np.arange(2, dtype=np.uint32), np.ones(2, np.float32),
                  np.full(2, 97, np.uint8), np.zeros((0, 6), np.int64), start, patterns,
                  False, MASK)


def test_grams_count_as_features():
    learner = Learner(ngram=["3"], skips=["1"], noconstant=True)
    learner.fit(["1 |a x y z w"])
    # 4 features; bigrams with <= 1 skip: 3 + 2; trigrams: xyz yzw, xyw, xzw
    assert learner._learner.stats[layouts.R_FEATURES] == 4 + 5 + 4


@settings(max_examples=500)
@given(st.lists(st.sampled_from(list(b"|: \tab\n0123x.-")), max_size=200).map(bytes),
       st.booleans())
def test_namespace_options_and_grams_keep_any_parsed_batch_valid(text, constant):
    from olearn.data.batch import valid_batch
    from olearn.data.hashing import namespace_hash
    from olearn.data.parse import FORMAT_VW, parse
    from olearn.features.namespaces import Selection
    config = Config(ignore=["b"], redefine=["a:= "], ngram=["3"], skips=["1"],
                    noconstant=not constant)
    batch = parse(np.frombuffer(text, dtype=np.uint8), FORMAT_VW, MASK,
                  0, False, constant, True, namespace_hash(b" "),
                  index_of=Selection.of(config).index_of)
    batch = Selection.of(config).apply(batch, constant, redefined=True)
    batch = Grams.of(config).apply(batch, constant, MASK)
    assert valid_batch(batch.offsets, batch.index, batch.value, batch.namespace, MASK)
    assert len(batch.parts) == len(batch.audit) == len(batch.index)
    assert ((batch.parts >= -1) & (batch.parts < len(batch.index))).all()
    assert not (batch.namespace == ord("b")).any()
