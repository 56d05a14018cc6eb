"""--bootstrap (olearn/reductions/bootstrap.py, reductions/bootstrap_kernels.py): VW's online
bootstrap, its Poisson draws and its vote."""
import numpy as np
import pytest
from conftest import olearn_here, readable_body, run_olearn
from hypothesis import given
from hypothesis import strategies as st

from olearn.errors import OptionError
from olearn.options.config import Config
from olearn.reductions.bootstrap_kernels import POISSON, poisson_draw, vote

LINES = "1 |a x:0.5 y\n0 |a y z\n1 't1 |b w\n0.5 |a x\n|a z\n1 |b w x\n"


def reference_draws(seed, n):
    """VW's merand48 then its Poisson(1) table, in plain Python."""
    state, out = seed, []
    for _ in range(n):
        state = (0xEECE66D5DEECE66D * state + 2147483647) % 2 ** 64
        u = ((state >> 25) & 0x7FFFFF) / 2 ** 23
        out.append(next((k for k, edge in enumerate(POISSON) if u <= edge), len(POISSON)))
    return out


@pytest.mark.parametrize("seed", [0, 42, 2 ** 63 + 5])
def test_draws_are_vw_s_poisson_draws(seed):
    random = np.array([seed], dtype=np.uint64)
    got = [poisson_draw(random) for _ in range(2000)]
    assert got == reference_draws(seed, 2000)
    assert abs(np.mean(got) - 1) < 0.15  # Poisson(1), as far as VW's generator gives it


def reference_vote(scores):
    """VW's bs_predict_vote, step by step."""
    votes = [int(np.floor(x + 0.5)) for x in scores]
    counter, current, first, several = 0, 1, 1, False
    for i, v in enumerate(votes):
        if not several:
            if i == 0:
                first = current = v
            elif first != current and v != current and v != first:
                several = True
        if counter == 0:
            counter, current = 1, v
        elif v == current:
            counter += 1
        else:
            counter -= 1
    if counter > 0 and several and 2 * votes.count(current) > len(votes):
        return current
    if several:
        ordered = sorted(votes)
        tmp, counter, run = ordered[0], 1, 1
        for v in ordered[1:]:
            if v == tmp:
                run += 1
            else:
                if run > counter:
                    current, counter = tmp, run
                tmp, run = v, 1
    return current


@given(st.lists(st.sampled_from([-1.0, 0.2, 0.6, 1.4, 2.0, 3.0]), min_size=1, max_size=9))
def test_vote_is_vw_s(scores):
    assert vote(np.array(scores), len(scores)) == reference_vote(scores)


def _run(tmp_path, *options):
    data, preds, raw = tmp_path / "d.vw", tmp_path / "p", tmp_path / "r"
    data.write_text(LINES)
    code, _, err = run_olearn("-d", data, "-p", preds, "-r", raw, *options)
    return code, preds.read_text(), raw.read_text(), err


def test_predictions_bounds_and_raw_scores_are_vw_s(tmp_path):
    code, preds, raw, err = _run(tmp_path, "--bootstrap", "3")
    # VW 9.11.9's -p and -r of this command
    assert code == 0 and "average loss = 0.434138" in err
    assert preds.splitlines()[2:] == ["0.000000 t1 0.000000 0.000000",
                                      "0.307537 0.253466 0.353084",
                                      "0.326887 0.293030 0.371571",
                                      "0.634424 0.546495 0.724655"]
    assert raw.splitlines()[3:] == ["1:0.31606 2:0.353084 3:0.253466",
                                    "1:0.31606 2:0.371571 3:0.29303",
                                    "1:0.632121 2:0.724655 3:0.546495"]


def test_vote_reports_the_error_of_labeled_examples(tmp_path):
    code, _, _, err = _run(tmp_path, "--bootstrap", "3", "--bs_type", "vote")
    # VW 9.11.9 says 0.8: it also counts the unlabeled line's vote as an error
    # (docs/vw-differences.md); the same predictions make 3 errors in 5 labels
    assert code == 0 and "average loss = 0.600000" in err


# --bootstrap over --oaa's classes: numeric feature names of the default namespace are their
# own indices (VW's hashing), so the reference needs no hash
CLASS_LINES = ("2 | 1:0.5 3:1\n1 | 2:1 3:-0.5\n3 2 | 1:1 2:0.25\n| 3:1\n2 | 1:-1 2:0.5\n"
               "1 | 2:1 3:-0.5\n3 | 1:0.75 3:0.5\n")


def reference_bootstrap_classes(lines, k, b, eta, seed, shift, mask):
    """VW's oaa over bs with plain SGD (--sgd --power_t 0, squared loss), in plain Python:
    each class's copies draw and predict (mean of clipped predictions, first best class), then
    each class learns ±1 through its copies, each drawing again (the squared loss's gradient
    2 (y - p)); returns the predicted classes
    and the weights by slot."""
    weights, low, high, state = {}, 0.0, 0.0, seed
    predicted = []

    def draw():
        nonlocal state
        state = (0xEECE66D5DEECE66D * state + 2147483647) % 2 ** 64
        u = ((state >> 25) & 0x7FFFFF) / 2 ** 23
        return next((j for j, edge in enumerate(POISSON) if u <= edge), len(POISSON))

    def clipped(slot_of, features):
        raw = sum(weights.get(slot_of(h), 0.0) * x for h, x in features)
        return min(max(raw, low), high)

    for line in lines.splitlines():
        label, features = line.split("|")
        features = [(int(h), float(x)) for h, x in (f.split(":") for f in features.split())]
        scores = []
        for c in range(k):
            copies = []
            for i in range(b):
                draw()
                copies.append(clipped(lambda h: ((h << shift) + c * b + i) & mask, features))
            scores.append(sum(copies) / b)
        predicted.append(1 + scores.index(max(scores)))
        if not label.strip():
            continue
        y, *importance = [float(v) for v in label.split()]
        for c in range(k):
            yk = 1.0 if y == c + 1 else -1.0
            for i in range(b):
                m = draw() * (importance[0] if importance else 1.0)
                low, high = min(low, yk), max(high, yk)

                def slot(h):
                    return ((h << shift) + c * b + i) & mask
                p = clipped(slot, features)
                for h, x in features:
                    weights[slot(h)] = weights.get(slot(h), 0.0) + 2 * eta * m * (yk - p) * x
    return predicted, weights


@pytest.mark.parametrize("seed", [0, 9])
def test_bootstrap_over_classes_is_the_reference(tmp_path, seed):
    data, preds, model = tmp_path / "d.vw", tmp_path / "p", tmp_path / "m.txt"
    data.write_text(CLASS_LINES)
    olearn_here("-d", data, "--bootstrap", 2, "--oaa", 3, "--sgd", "--power_t", 0, "-l", 0.1,
                "--noconstant", "--random_seed", seed, "-b", 10, "-p", preds,
                "--readable_model", model, "--quiet")
    expected, weights = reference_bootstrap_classes(CLASS_LINES, 3, 2, 0.1, seed, 3, 1023)
    assert [int(v) for v in preds.read_text().split()] == expected
    got = {int(i): float(w) for i, w in (line.split(":")[:2]
                                         for line in readable_body(model.read_text()))}
    assert got.keys() == {s for s, w in weights.items() if w != 0}
    assert all(got[s] == pytest.approx(weights[s], rel=1e-5) for s in got)


def test_bootstrap_over_classes_saves_and_loads(tmp_path):
    data, model, saved, loaded = (tmp_path / n for n in ("d.vw", "m", "r1", "r2"))
    data.write_text(CLASS_LINES)
    olearn_here("-d", data, "--bootstrap", 3, "--oaa", 3, "-f", model, "--readable_model", saved,
                "--quiet")
    olearn_here("-d", data, "-i", model, "-t", "--readable_model", loaded, "--quiet")
    assert readable_body(loaded.read_text()) == readable_body(saved.read_text())
    assert len(readable_body(saved.read_text())) > 3 * 3


def test_bootstrap_over_classes_matches_vw(vw, tmp_path):
    """VW's test 158 (bootstrap over oaa, every pair of the namespace, two passes), then the
    saved model's test-only predictions."""
    data, model, vw_model, ours_p, theirs_p = (tmp_path / n for n in (
        "multiclass", "m", "vm", "p1", "p2"))
    data.write_text("".join(f"{c} | {w}\n" for c, w in enumerate(
        "one two three four five six seven eight nine ten".split(), 1)))
    args = ("-d", data, "--bootstrap", 4, "--oaa", 10, "-q", "::",
            "--leave_duplicate_interactions", "-c", "-k", "--passes", 2, "--holdout_off", "-P1")
    (code, _, ours), (_, _, theirs) = run_olearn(*args, "-f", model), vw(*args, "-f", vw_model)
    table = [line for line in ours.splitlines() if line[:1].isdigit()]
    assert code == 0 and table == [line for line in theirs.splitlines() if line[:1].isdigit()]
    assert len(table) == 20 and "average loss = 0.450000" in ours
    vw("-d", data, "-t", "-i", vw_model, "-p", theirs_p)
    run_olearn("-d", data, "-t", "-i", model, "-p", ours_p)
    assert ours_p.read_text() == theirs_p.read_text()


@pytest.mark.parametrize(("options", "message"), [
    ({"bootstrap": 2, "oaa": 3, "raw_predictions": "r"},
     "--bootstrap with --oaa does not take --raw_predictions"),
    ({"bootstrap": 2, "oaa": 3, "oaa_subsample": 1}, "--bootstrap does not take --oaa_subsample"),
    ({"bootstrap": 16, "oaa": 5, "bit_precision": 6}, "--bootstrap 16 needs at least 7 bits"),
    ({"bs_type": "vote", "explicit": frozenset({"bs_type"})}, "--bs_type needs --bootstrap"),
])
def test_bootstrap_refuses_what_it_cannot_aggregate(options, message):
    with pytest.raises(OptionError, match=message):
        Config(**options)
