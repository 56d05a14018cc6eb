"""Interactions: the kernel expansion against a plain-Python reference, and options end to end."""
import itertools

import numpy as np
import pytest
from conftest import olearn_cmd, run_cmd

from olearn.errors import OlearnError
from olearn.features.interactions import (
    SIZE_CAP,
    encode,
    expand,
    expanded_size,
    expanded_sizes,
    terms_of,
    with_wildcards,
)

FNV = 16777619


def _reference(features, term, mask, permutations):
    """Every interaction of one term, written plainly: product over namespaces, with the
    index-ordered rule for adjacent repeats."""
    groups = [[(i, x) for ns, i, x in features if ns == letter] for letter in term.encode()]
    out = []
    for combo in itertools.product(*[range(len(g)) for g in groups]):
        if not permutations and any(term[k] == term[k - 1] and combo[k] < combo[k - 1]
                                    for k in range(1, len(term))):
            continue
        picked = [groups[k][c] for k, c in enumerate(combo)]
        g = FNV * picked[0][0]
        for i, _ in picked[1:-1]:
            g = FNV * (g ^ i)
        index = (g ^ picked[-1][0]) & mask
        value = np.float32(1)
        for _, x in picked:
            value = np.float32(value * np.float32(x))
        out.append((index, float(value)))
    return out


@pytest.mark.parametrize("terms, permutations", [
    (["ab"], False), (["aa"], False), (["aa"], True), (["abc"], False), (["aab", "ba"], False),
    (["abab"], True), (["cab"], False),
])
def test_expand_equals_reference(terms, permutations):
    rng = np.random.default_rng(7)
    features = []
    for ns in b"abc":
        for _ in range(rng.integers(0, 4)):
            features.append((ns, int(rng.integers(0, 2**18)), float(rng.normal())))
    namespace = np.array([f[0] for f in features], dtype=np.uint8)
    index = np.array([f[1] for f in features], dtype=np.uint32)
    value = np.array([f[2] for f in features], dtype=np.float32)
    table = encode(terms_of([], [], terms, permutations, False, print))
    ranges = np.zeros((256, 2), dtype=np.int64)
    need = expanded_size(namespace, 0, len(features), table, ranges)
    idx = np.empty(need, dtype=np.uint32)
    val = np.empty(need, dtype=np.float32)
    n = expand(index, value, 0, len(features), table, ranges, (1 << 18) - 1, permutations, idx,
               val, np.empty((0, table.shape[1]), dtype=np.int64),
               np.empty(table.shape[1], dtype=np.int64))
    want = [(i, float(np.float32(x))) for _, i, x in features]
    for term in terms_of([], [], terms, permutations, False, print):
        want += _reference([(ns, i, np.float32(x)) for ns, i, x in features], term,
                           (1 << 18) - 1, permutations)
    assert [(int(i), pytest.approx(float(v), rel=1e-6)) for i, v in zip(idx[:n], val[:n])] == want


def test_duplicate_interactions_are_removed_with_a_warning():
    warnings = []
    assert terms_of(["ab", "ba"], [], [], False, False, warnings.append) == ["ab"]
    assert len(warnings) == 1
    assert terms_of(["ab", "ba"], [], [], False, True, warnings.append) == ["ab", "ba"]


def test_wildcards_give_each_combination_once():
    assert with_wildcards(["::", "ab"], [ord("a"), ord("b")]) == ["aa", "ab", "bb"]


def test_wildcards_with_leave_duplicates_give_every_ordered_tuple():
    assert (with_wildcards(["::", "ab"], [ord("a"), ord("b")], leave_duplicates=True)
            == ["aa", "ab", "ba", "bb", "ab"])
    assert len(with_wildcards([":::"], [ord("a"), ord("b")], leave_duplicates=True)) == 8


def test_wildcards_that_would_expand_too_far_are_refused_before_expanding():
    with pytest.raises(OlearnError, match="81,450,625 terms"):
        with_wildcards(["::::"], list(range(32, 127)), leave_duplicates=True)


def test_wildcards_too_wide_for_one_line_are_one_error_line():
    import string
    line = "1 " + " ".join(f"|{ns} x" for ns in string.ascii_letters + string.digits) + "\n"
    code, _, err = run_cmd(olearn_cmd("--quiet", "--interactions", "::::",
                                      "--leave_duplicate_interactions"), input=line.encode())
    assert code != 0 and err.strip().count("\n") == 0 and "14,776,336 terms" in err


def test_terms_are_sorted_by_length_then_letters():
    assert (terms_of(["ba", "ab"], ["abc"], ["abcd"], True, False, print)
            == ["ab", "ba", "abc", "abcd"])


@pytest.mark.parametrize("option, term", [("-q", "abc"), ("--cubic", "ab"),
                                          ("--interactions", "a")])
def test_interaction_of_the_wrong_size_is_refused(option, term):
    code, _, err = run_cmd(olearn_cmd(option, term), input=b"1 |a x\n")
    assert code == 2 and err.strip().count("\n") == 0 and "expected" in err


def test_model_keeps_its_interactions(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{i % 3} |a x:{i % 5} |b y{i % 4}\n" for i in range(200)))
    model = tmp_path / "m.olearn"
    run_cmd(olearn_cmd("-d", data, "-q", "ab", "-f", model, "--quiet"))
    _, with_q, _ = run_cmd(olearn_cmd("-t", "-i", model, "-d", data, "-q", "ab",
                                      "-p", "/dev/stdout", "--quiet"))
    _, saved, _ = run_cmd(olearn_cmd("-t", "-i", model, "-d", data, "-p", "/dev/stdout", "--quiet"))
    _, without, _ = run_cmd(olearn_cmd("-t", "-i", model, "-d", data, "-p", "/dev/stdout",
                                       "--quiet", "--quadratic", "ba"))
    assert saved == with_q and saved != without


def test_expanded_sizes_count_each_examples_interactions():
    offsets = np.array([0, 3, 5])
    namespace = np.array([97, 97, 98, 97, 98], dtype=np.uint8)
    terms = np.array([[2, 97, 98]], dtype=np.int64)
    assert expanded_sizes(offsets, namespace, terms).tolist() == [3 + 2 * 1, 2 + 1]
    assert expanded_sizes(offsets, namespace, np.zeros((0, 3), dtype=np.int64)).tolist() == [3, 2]


def test_expanded_sizes_refuse_malformed_offsets():
    with pytest.raises(ValueError, match="malformed"):
        expanded_sizes(np.array([0, 9]), np.zeros(3, dtype=np.uint8), np.zeros((0, 3), np.int64))


def test_an_expansion_too_large_to_count_saturates_instead_of_wrapping():
    # 600k features of one namespace, --interactions aaaa: 1.3e23 > 2^63 would wrap
    namespace = np.full(600_000, 97, dtype=np.uint8)
    terms = np.array([[4, 97, 97, 97, 97]] * 3, dtype=np.int64)
    sizes = expanded_sizes(np.array([0, 600_000]), namespace, terms)
    assert sizes.tolist() == [SIZE_CAP]
