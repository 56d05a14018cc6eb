"""Model files written by olearn 0.1.0 (tests/fixtures, see its README) load in this olearn and
predict exactly what 0.1.0 predicted with them: the same ``-p`` text, digit for digit."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, olearn_here
from fixtures import make_fixtures

NAMES = [*make_fixtures.FIXTURES, make_fixtures.L1]


def _fixture(name: str, suffix: str) -> Path:
    return FIXTURES / f"{name}-{make_fixtures.RELEASE}{suffix}"


@pytest.mark.parametrize("name", NAMES)
def test_release_model_predicts_what_the_release_predicted(name: str, tmp_path: Path) -> None:
    predictions = tmp_path / "test.p"
    olearn_here("-t", "-i", _fixture(name, ".olearn"), "-d", FIXTURES / "test.vw",
                "-p", predictions, "--quiet")
    # line lists, so that a failure shows which examples differ
    assert (predictions.read_text().splitlines()
            == _fixture(name, ".test.p").read_text().splitlines())


def test_fixture_data_is_what_the_script_writes() -> None:
    """The models' provenance: train.vw and test.vw are make_fixtures.py's data."""
    assert (FIXTURES / "train.vw").read_text() == "".join(make_fixtures.train_lines())
    assert (FIXTURES / "test.vw").read_text() == "".join(make_fixtures.test_lines())


@pytest.mark.parametrize("name", ["boa", "saew", "saew_calibrate"])
def test_release_boa_model_continues_with_frozen_rates(name: str, tmp_path: Path) -> None:
    """A 0.1.0 model keeps each BOA corner's weight where the frozen rate now is: it loads,
    its corners get the rates of their state, and training continues to a model that loads."""
    model, predictions = tmp_path / "more.olearn", tmp_path / "more.p"
    olearn_here("-i", _fixture(name, ".olearn"), "-d", FIXTURES / "train.vw", "-f", model,
                "-p", predictions, "--quiet")
    values = [float(line.split()[0]) for line in predictions.read_text().splitlines()]
    assert len(values) == 300 and all(abs(v) < 1e6 for v in values)
    olearn_here("-t", "-i", model, "-d", FIXTURES / "test.vw", "--quiet")
