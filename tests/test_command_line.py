"""The command line's words (click, olearn/options/click_command.py): every spelling a VW user
types, the decisions where argparse, click and VW differ, one-line errors, and shell completion."""
import os
import shutil
import subprocess
import sys

import pytest
from click.shell_completion import BashComplete
from conftest import olearn_cmd, run_olearn

from olearn.frontends import cli, console
from olearn.options import click_command
from olearn.options.command_line import config_of, parse
from olearn.options.command_options import COMPLETE_VAR, UsageError


def test_short_option_takes_its_value_attached_or_apart():
    assert parse(["-b18"]) == parse(["-b", "18"]) == {"bit_precision": 18, "paths": []}


def test_long_option_takes_its_value_after_an_equals_sign():
    assert parse(["--passes=5"])["passes"] == 5


def test_repeated_option_keeps_every_value_in_order():
    assert parse(["-q", "ab", "--quadratic", "cd", "-qef"])["quadratic"] == ["ab", "cd", "ef"]


def test_later_value_of_a_single_option_wins():
    assert parse(["-b", "12", "-b", "14"])["bit_precision"] == 14


def test_short_flags_combine():
    assert parse(["-ct"]) == {"cache": True, "testonly": True, "paths": []}


def test_negative_numbers_are_values():
    given = parse(["--min_prediction", "-5", "--classweight", "-1:0.5", "--hash_seed", "-1"])
    assert (given["min_prediction"], given["classweight"], given["hash_seed"]) == (
        -5.0, ["-1:0.5"], -1)


def test_paths_are_read_after_data_files_and_options_may_follow_them():
    config = config_of(["a.vw", "-d", "b.vw", "c.vw", "--quiet"])
    assert config.data == ["b.vw", "a.vw", "c.vw"] and config.quiet


def test_double_dash_makes_the_rest_paths():
    assert parse(["-c", "--", "--quiet", "-b"]) == {"cache": True, "paths": ["--quiet", "-b"]}


def test_only_the_options_given_are_explicit():
    assert config_of(["-c", "--cache_file", "f"]).explicit == {"cache", "cache_file"}


def test_prefix_of_a_long_option_is_refused_naming_the_option():
    # argparse took unambiguous prefixes unless told not to (olearn told it not to); VW and
    # click take none
    with pytest.raises(UsageError, match=r"^unrecognized arguments: --bit \(did you mean "
                                         r"--bit_precision\?\)$"):
        parse(["--bit", "18"])


def test_short_option_value_starts_right_after_it():
    # argparse read -b=18 as 18; VW and click read the value =18
    with pytest.raises(UsageError, match="^argument -b/--bit_precision: invalid int value: '=18'$"):
        parse(["-b=18"])


def test_misspelled_option_is_refused_with_the_nearest_names_first():
    with pytest.raises(UsageError, match=r"^unrecognized arguments: --pases \(did you mean "
                                         r"--passes or "):
        parse(["--pases", "2"])


def test_option_is_not_the_value_of_the_option_before_it():
    # as under argparse (VW would read a file named --quiet)
    with pytest.raises(UsageError, match="^argument -d/--data: expected one argument$"):
        parse(["-d", "--quiet"])


def test_option_missing_its_value_at_the_end():
    with pytest.raises(UsageError, match="^argument --passes: expected one argument$"):
        parse(["-d", "x.vw", "--passes"])


def test_flag_takes_no_value():
    with pytest.raises(UsageError, match="^argument --quiet: takes no value$"):
        parse(["--quiet=1"])


def test_value_of_the_wrong_type_names_the_option():
    with pytest.raises(UsageError, match="^argument -b/--bit_precision: invalid int value: 'x'$"):
        parse(["-b", "x"])


def test_usage_error_is_one_line_with_exit_code_2():
    code, out, err = run_olearn("--bit", "18")
    assert (code, out) == (2, "")
    assert err == ("olearn: error: unrecognized arguments: --bit (did you mean --bit_precision?) "
                   "(see olearn --help)\n")


def test_help_shows_the_paths_then_the_command_options_then_the_groups(capsys):
    cli.command(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("Usage: olearn [OPTIONS] [PATH]...\n")
    assert (text.index("\nArguments:\n  PATH ") < text.index("\nOptions:\n  -h, --help ")
            < text.index("--completion [bash|zsh|fish]") < text.index("\nInput options:\n")
            < text.index("\nConsole:\n"))
    assert "--warm-cache" not in text


def test_help_fits_a_narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    options = click_command.help_text().split("\nArguments:\n")[1].splitlines()
    # only an option too long for the first column may be wider: its help starts below it
    assert all(len(line) <= 58 or "  " not in line.strip() for line in options)
    assert any(line.startswith("  -d, --data PATH          Example file") for line in options)


def _completions(args, incomplete):
    return [(item.type, item.value) for item in BashComplete(
        click_command.command(), {}, "olearn", COMPLETE_VAR).get_completions(
        args, incomplete)]


def test_completion_of_a_partial_option_name():
    env = {**os.environ, COMPLETE_VAR: "bash_complete",
           "COMP_WORDS": "olearn -d train.vw --bit_pr", "COMP_CWORD": "3"}
    proc = subprocess.run(olearn_cmd(), env=env, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "plain,--bit_precision\n", "")


def test_completion_leaves_out_a_single_option_already_given():
    assert ("plain", "--l1") not in _completions(["--l1", "0.1"], "--l")
    assert ("plain", "--l2") in _completions(["--l1", "0.1"], "--l")


def test_completion_offers_a_repeatable_option_again():
    assert _completions(["-q", "ab"], "--quad") == [("plain", "--quadratic")]


def test_completion_offers_the_choices_of_an_option():
    assert _completions(["--loss_function"], "l") == [("plain", "logistic")]


@pytest.mark.parametrize("args", [["-d"], ["--cache_file"], ["-f"], ["--learning_curve"], []])
def test_completion_of_a_file_is_left_to_the_shell(args):
    assert _completions(args, "tr") == [("file", "tr")]


def test_completion_of_a_folder_is_left_to_the_shell():
    assert _completions(["--dictionary_path"], "d") == [("dir", "d")]


def test_completion_of_a_value_that_is_no_file_offers_nothing():
    assert _completions(["-q"], "a") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_of_each_shell(capsys, shell):
    cli.command(["--completion", shell])
    assert f"{COMPLETE_VAR}={shell}_complete" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_an_option_with_the_script(tmp_path):
    wrapper = tmp_path / "olearn"  # the script runs `olearn` from PATH for each Tab
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m olearn "$@"\n')
    wrapper.chmod(0o755)
    script = ('eval "$(olearn --completion bash)"; COMP_WORDS=(olearn --passes 2 --holdout_o); '
              'COMP_CWORD=3; _olearn_completion olearn; echo "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=60)
    assert (proc.stdout, proc.stderr) == ("--holdout_off\n", "")


@pytest.mark.parametrize("argv, env, completes", [
    (["--completion", "zsh"], {}, True), (["--completion=fish"], {}, True),
    ([], {COMPLETE_VAR: "bash_complete"}, True), (["-d", "x.vw"], {}, False)])
def test_completion_builds_no_kernels(monkeypatch, argv, env, completes):
    monkeypatch.delenv(COMPLETE_VAR, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert console.completes(argv) is completes


def test_python_api_and_daemon_import_no_click():
    code = ("import sys, olearn, olearn.serving.daemon\n"
            "olearn.Learner(bit_precision=10)\n"
            "print(sorted(name for name in sys.modules if name.split('.')[0] == 'click'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert (proc.returncode, proc.stdout) == (0, "[]\n"), proc.stderr
