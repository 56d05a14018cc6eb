"""The option registry: each option declared once, and everything derived from it (Config, the
command line, model and cache options, the Python API's string) agreeing with it."""
import dataclasses

import numpy as np
import pytest

import olearn
from olearn.errors import OptionError
from olearn.options import click_command, command_line
from olearn.options.config import MODEL_OPTIONS, PARSING_OPTIONS, REGISTRY, Config


def test_config_has_one_field_per_option_and_their_defaults():
    fields = {f.name: f for f in dataclasses.fields(Config)}
    assert set(fields) == set(REGISTRY) | {"explicit"}
    fresh = Config()
    for name, option in REGISTRY.items():
        assert getattr(fresh, name) == (list(option.default) if option.kind is list
                                        else option.default), name


def test_every_flag_of_every_option_sets_that_option():
    for name, option in REGISTRY.items():
        value = {bool: [], int: ["3"], float: ["0.25"], list: ["ab"]}.get(
            option.kind, [option.choices[-1]] if option.choices else ["x"])
        for flag in option.flags:
            given = command_line.parse([flag, *value])
            assert name in given and set(given) == {name, "paths"}, (flag, given)


def test_help_shows_every_option_in_its_group():
    text = click_command.help_text()
    for name, option in REGISTRY.items():
        assert option.flags[-1] in text, name
    assert text.index("Gradient descent:") < text.index("--power_t") < text.index("Loss:")


def test_scopes_of_the_model_and_the_cache():
    assert set(PARSING_OPTIONS) == {"bit_precision", "hash", "hash_seed", "noconstant", "format",
                                    "ignore", "keep", "redefine", "ngram", "skips", "csoaa",
                                    "named_labels", "multilabel_oaa", "feature_limit", "affix",
                                    "dictionary", "dictionary_path",
                                    "csv", "csv_header", "csv_no_file_header", "csv_separator",
                                    "csv_ns_value", "csoaa_ldf", "wap_ldf", "interact"}
    assert {"loss_function", "quantile_tau", "quadratic", "l1", "stage_poly", "saew_grid_B",
            "link", "binary"} <= set(MODEL_OPTIONS)
    assert not {"passes", "predictions", "final_regressor", "data", "quiet"} & set(MODEL_OPTIONS)


def test_learner_takes_a_command_line_string_like_the_cli():
    from_string = olearn.Learner("-q ab --l1 1e-6 -b 12 --loss_function=logistic")
    from_keywords = olearn.Learner(quadratic=["ab"], l1=1e-6, bit_precision=12,
                                   loss_function="logistic")
    assert from_string.config == dataclasses.replace(from_keywords.config,
                                                     explicit=from_string.config.explicit)
    assert from_string.config.explicit == from_keywords.config.explicit


def test_learner_keywords_win_over_its_string():
    assert olearn.Learner("-b 12 --l1 1e-6", bit_precision=14).config.bit_precision == 14


@pytest.mark.parametrize("args, message", [
    ("--no_such_option", "unrecognized arguments"), ("-b 99", "-b/--bit_precision"),
    ("-d train.vw", "give the examples to fit"), ("--loss_function nope", "invalid choice"),
])
def test_learner_string_errors_are_option_errors(args, message):
    with pytest.raises(OptionError, match=message):
        olearn.Learner(args)


def test_option_checks_name_the_option_and_normalize_the_value():
    assert type(Config(bit_precision=np.int64(12)).bit_precision) is int
    assert Config(quadratic="ab").quadratic == ["ab"]
    for name, value, message in (("l1", -1.0, "--l1 must be"), ("sgd", "yes", "--sgd is a flag"),
                                 ("quadratic", 3, "-q/--quadratic expects text"),
                                 ("predictions", 1.5, "-p/--predictions expects text")):
        with pytest.raises(OptionError, match=message):
            Config(**{name: value})
