"""--dictionary and --dictionary_path (olearn/features/dictionary.py): VW's dictionaries of
features, looked up by name on the parse threads."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from conftest import readable_body, run_olearn

from olearn.data.hashing import hash_bytes
from olearn.data.parse import FORMAT_VW
from olearn.data.sources import Block
from olearn.engine.learner import OnlineLearner
from olearn.features.dictionary import DICTIONARY_NAMESPACE, file_hash
from olearn.options.config import Config

# VW's test 65: the words of namespace w are known only through the dictionary (--ignore w)
WORDS = b"a myfeat:1\nb 5:2.1\nc myfeat:2\nd 5\n"
DATA = "+1 |w a\n-1 |w b\n+1 |w c\n-1 |w d\n"
TEST_65 = ("--binary", "--ignore", "w", "--holdout_off", "--passes", 32, "-k", "-c",
           "--dictionary", "w:words.dict", "--dictionary", "w:words.dict.gz")


def test_file_hash_is_vw_s():
    assert file_hash(WORDS) == 0x3226E82E3D58B6B2  # VW 9.11.9's "scanned dictionary" line
    assert file_hash(WORDS.replace(b"\n", b"\r\n")) == file_hash(WORDS)


def _h(name: bytes) -> int:
    """A default-namespace feature's index (VW's hash, seed 0, 18 bits)."""
    return hash_bytes(name) & ((1 << 18) - 1)


def _learner(tmp_path, dictionaries, *more):
    for name, text in dictionaries.items():
        (tmp_path / name).write_bytes(text)
    return OnlineLearner(Config(dictionary=[f"{ns}:{name}" if ns else name for ns, name in more],
                                dictionary_path=[str(tmp_path)]))


def _parsed(learner, lines: bytes):
    return learner.parse_block(Block(bytearray(lines), "t.vw", 0, True), FORMAT_VW)


def reference(learner_plain, lines: bytes, entries):
    """Each example's features in plain Python: the example's own (parsed without
    dictionaries), with every found word's entries (``entries``: per namespace byte, a list
    of dicts word -> [(index, value)]) before the namespace of the first found word."""
    plain = _parsed(learner_plain, lines)
    text = bytes(plain.text)
    out = []
    for e in range(len(plain)):
        lo, hi = plain.offsets[e], plain.offsets[e + 1]
        own = [(int(plain.index[k]), float(plain.value[k]), int(plain.namespace[k]))
               for k in range(lo, hi)]
        found, first = [], None
        for k in range(lo, hi - 1):  # the constant has no name
            s, t = plain.audit[k, 0], plain.audit[k, 1]
            for table in entries.get(int(plain.namespace[k]), []):
                hits = table.get(text[s:t], [])
                if hits and first is None:
                    first = next(j for j in range(k - lo + 1)
                                 if own[j][2] == plain.namespace[k])
                found += [(i, v, DICTIONARY_NAMESPACE) for i, v in hits]
        if first is None:
            first = len(own) - 1
        out.append(own[:first] + found + own[first:])
    return out


def test_entries_are_added_as_the_reference_adds_them(tmp_path):
    one = b"w1 d1:0.5 d2\nw2 3\nw1 zz\nlonely\nw3 |x q\n  w4\t7:2 8\n"
    two = b"w2 e1\nw4 e2:0.25\n"
    learner = _learner(tmp_path, {"one.dict": one, "two.dict": two},
                       ("a", "one.dict"), ("a", "two.dict"), (None, "two.dict"))
    plain = OnlineLearner(Config(audit=True))
    rng = np.random.default_rng(7)
    words = [b"w1", b"w2", b"w3", b"w4", b"other", b"lonely"]
    lines = b"".join(
        b"1 |b x |a " + b" ".join(words[i] for i in rng.integers(0, 6, 3)) + b" | "
        + b" ".join(words[i] for i in rng.integers(0, 6, 2)) + b"\n" for _ in range(40))
    table_one = {b"w1": [(_h(b"d1"), 0.5), (_h(b"d2"), 1.0)], b"w2": [(3, 1.0)],
                 b"w4": [(7, 2.0), (8, 1.0)]}
    table_two = {b"w2": [(_h(b"e1"), 1.0)], b"w4": [(_h(b"e2"), 0.25)]}
    expected = reference(plain, lines, {97: [table_one, table_two], 32: [table_two]})
    batch = _parsed(learner, lines)
    got = [[(int(batch.index[k]), float(batch.value[k]), int(batch.namespace[k]))
            for k in range(batch.offsets[e], batch.offsets[e + 1])] for e in range(len(batch))]
    assert got == expected
    assert sum(f[2] == DICTIONARY_NAMESPACE for row in got for f in row) > 40


def _test_65_files(tmp_path):
    (tmp_path / "d.vw").write_text(DATA)
    (tmp_path / "words.dict").write_bytes(WORDS)
    (tmp_path / "words.dict.gz").write_bytes(gzip.compress(WORDS))


def test_test_65_learns_the_words_from_the_dictionary(tmp_path):
    _test_65_files(tmp_path)
    code, _, err = run_olearn("-d", "d.vw", *TEST_65, cwd=tmp_path)
    assert code == 0 and "average loss = 0.015625" in err
    assert "total feature number = 384" in err  # the dictionary twice, and the constant
    assert "dictionary words.dict contains 4 items" in err


def test_a_model_keeps_its_dictionaries(tmp_path):
    _test_65_files(tmp_path)
    assert run_olearn("-d", "d.vw", *TEST_65, "-f", "m", cwd=tmp_path)[0] == 0
    code, _, _ = run_olearn("-d", "d.vw", "-i", "m", "-t", "-p", "p", cwd=tmp_path)
    assert code == 0 and (tmp_path / "p").read_text().split() == ["1", "-1", "1", "-1"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _, err = run_olearn("-d", tmp_path / "d.vw", "-i", tmp_path / "m", "-t", cwd=elsewhere)
    assert code != 0 and "cannot find dictionary 'words.dict'" in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_dictionary_is_an_error(tmp_path):
    (tmp_path / "d.vw").write_text(DATA)
    code, _, err = run_olearn("-d", "d.vw", "--dictionary", "w:nowhere.dict", cwd=tmp_path)
    assert code != 0 and err.strip().splitlines() == [
        "olearn: error: cannot find dictionary 'nowhere.dict' in path; try adding "
        "--dictionary_path"]


def test_test_65_matches_vw(vw, tmp_path):
    _test_65_files(tmp_path)
    ours, theirs = run_olearn("-d", "d.vw", *TEST_65, cwd=tmp_path), vw("-d", "d.vw", *TEST_65,
                                                                        cwd=tmp_path)
    table = [line for line in ours[2].splitlines() if line[:1].isdigit()]
    assert table and table == [line for line in theirs[2].splitlines() if line[:1].isdigit()]


def test_dictionaries_of_several_namespaces_learn_as_vw(vw, tmp_path):
    """Two dictionaries of a namespace and one of another, words with values, repeats and
    misses: VW's weights (to float32 rounding: olearn's sums may differ in the last digit)."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(12)]
    (tmp_path / "one.dict").write_text("".join(
        f"{w} d{rng.integers(9)}:{rng.random():.2f} d{rng.integers(9)}\n" for w in words[:8]))
    (tmp_path / "two.dict").write_text("".join(f"{w}\tn{rng.integers(5)} 3:0.5\n"
                                               for w in words[4:]))
    (tmp_path / "d.vw").write_text("".join(
        f"{rng.choice(['1', '-1'])} |a {' '.join(rng.choice(words, 3))}:2 |b "
        f"{' '.join(rng.choice(words, 2))} other\n" for _ in range(100)))
    args = ("-d", "d.vw", "--dictionary", "a:one.dict", "--dictionary", "a:two.dict",
            "--dictionary", "b:two.dict", "--adaptive", "--normalized", "--readable_model")
    assert run_olearn(*args, "ours.txt", cwd=tmp_path)[0] == 0
    vw(*args, "theirs.txt", cwd=tmp_path)
    ours, theirs = ({int(i): float(w.split()[0]) for i, w in (line.split(":") for line in
                                                      readable_body((tmp_path / name).read_text()))}
                    for name in ("ours.txt", "theirs.txt"))
    assert len(ours) > 30 and ours.keys() == theirs.keys()
    assert all(ours[i] == pytest.approx(theirs[i], rel=1e-4, abs=1e-6) for i in ours)
