"""--affix (olearn/features/affixes.py): VW's prefix and suffix features."""
import numpy as np
import pytest
from conftest import run_olearn
from reference import vw_hash

from olearn.data.hashing import namespace_hash
from olearn.engine.learner import OnlineLearner
from olearn.errors import OptionError
from olearn.features.affixes import AFFIX_NAMESPACE, codes_of
from olearn.options.config import Config


def _features(line: bytes, **options):
    learner = OnlineLearner(Config(bit_precision=18, quiet=True, **options))
    from olearn.data import sources
    batch = learner.parse_block(sources.Block(line + b"\n", "x", 0, True), 0)
    return [(int(j), float(x), int(ns)) for j, x, ns in
            zip(batch.index, batch.value, batch.namespace)], batch


def reference_affix(name: bytes, code: int, ns: bytes) -> int:
    """VW's affix hash: the prefix or suffix hashed in the namespace, times its multiplier."""
    length, prefix = code >> 1, code & 1
    part = name if len(name) <= length else (name[:length] if prefix else name[-length:])
    seed = namespace_hash(ns)
    return (vw_hash(part, seed) * (13903957 + code * 27942141)) & ((1 << 18) - 1)


def test_affix_features_follow_the_example_s_own_before_the_constant():
    feats, batch = _features(b"1 |ab happiness:0.5 |c x", affix="+3a,-2")
    affixed = [f for f in feats if f[2] == AFFIX_NAMESPACE]
    # a's names get prefixes of 3 (the default namespace has no feature here)
    assert affixed == [(reference_affix(b"happiness", 3 << 1 | 1, b"ab"), 0.5, AFFIX_NAMESPACE)]
    assert [f[2] for f in feats] == [97, 99, AFFIX_NAMESPACE, 128]
    assert len(batch.audit) == 0  # names were parsed for the affixes only


def test_several_affixes_of_a_namespace_come_last_given_first():
    feats, _ = _features(b"| word", affix="+1,-2")
    affixed = [j for j, _, ns in feats if ns == AFFIX_NAMESPACE]
    assert affixed == [reference_affix(b"word", 2 << 1, b" "),
                       reference_affix(b"word", 1 << 1 | 1, b" ")]


@pytest.mark.parametrize(("text", "message"), [
    ("+8", "length must be 1..7"), ("x2", "length must be 1..7"), ("+2ab", "malformed"),
    ("-2|", "malformed")])
def test_malformed_affixes_are_refused(text, message):
    with pytest.raises(OptionError, match=message):
        Config(affix=text)


def test_codes_are_vw_s_four_bit_affixes():
    codes = codes_of(Config(affix="+2a,-3,+1a"))
    assert codes[97] == ((2 << 1 | 1) << 4) | (1 << 1 | 1) and codes[32] == 3 << 1


def test_affix_runs_from_the_command_line_with_a_dash_value(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("-1 | happiness\n1 | happier\n-1 | ugliness\n1 | ugly\n")
    code, out, err = run_olearn("-d", data, "--affix", "-2", "--audit")
    assert code == 0 and "affix^ss:" in out and "affix^er:" in out
    assert np.isfinite(float(err.split("average loss = ")[1].split()[0]))


def test_affixes_refuse_names_outside_the_text():
    from olearn.features.affixes import add_affixes
    audit = np.array([[0, 50, -1, -1, -1, -1]], dtype=np.int64)
    codes = np.zeros(256, dtype=np.uint64)
    codes[32] = 3
    with pytest.raises(ValueError, match="outside the text"):
        add_affixes(np.array([0, 1]), np.zeros(1, np.uint32), np.ones(1, np.float32),
                    np.full(1, 32, np.uint8), audit, np.zeros(10, np.uint8), codes, 255, 0,
                    False, 0, False)
