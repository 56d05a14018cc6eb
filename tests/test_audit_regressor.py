"""--audit_regressor (olearn/frontends/audit_regressor.py): a model's weights named by the
data."""
from conftest import run_olearn

from olearn import Learner
from olearn.learners.weights import W_W

LINES = "1 |a x y |b z\n0 |a y\n1 |b z w\n"


def test_every_nonzero_weight_is_listed_once_by_name(tmp_path):
    data, model, listing = tmp_path / "d.vw", tmp_path / "m", tmp_path / "a.txt"
    data.write_text(LINES)
    assert run_olearn("-d", data, "-f", model, "-q", "ab", "--quiet")[0] == 0
    code, _, err = run_olearn("-d", data, "-i", model, "--audit_regressor", listing)
    assert code == 0 and "Regressor contains" in err
    rows = [line.rsplit(":", 2) for line in listing.read_text().splitlines()]
    names = [name for name, _, _ in rows]
    assert names[:4] == ["a^x", "a^y", "b^z", "Constant"] and "a^x*b^z" in names
    weights = Learner(bit_precision=18, quadratic=["ab"]).fit(LINES.splitlines())
    table = weights._learner.weights[:, W_W]
    assert len(rows) == len(set(names)) == int((table != 0).sum())
    for _, index, weight in rows:
        assert abs(float(weight) - float(table[int(index)])) <= 1e-5 * max(1, abs(float(weight)))


def test_classes_are_written_first_with_oaa(tmp_path):
    data, model, listing = tmp_path / "d.vw", tmp_path / "m", tmp_path / "a.txt"
    data.write_text("1 |a x\n2 |a y\n")
    run_olearn("-d", data, "-f", model, "--oaa", "2", "--quiet")
    assert run_olearn("-d", data, "-i", model, "--audit_regressor", listing)[0] == 0
    assert {line.split(":")[0] for line in listing.read_text().splitlines()} == {"0", "1"}


def test_a_cache_is_refused(tmp_path):
    data, model = tmp_path / "d.vw", tmp_path / "m"
    data.write_text(LINES)
    run_olearn("-d", data, "-f", model, "--quiet")
    code, _, err = run_olearn("-d", data, "-i", model, "--audit_regressor", tmp_path / "a", "-c")
    assert code != 0 and "not with --cache" in err and "Traceback" not in err
