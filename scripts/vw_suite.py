"""Run Vowpal Wabbit's own core test suite (test/core.vwtest.json) with olearn and with VW.

Each in-scope test runs in its own scratch directory per runner, as VW's test/run_tests.py does
(its input files copied in from the test tree or from the directories of the tests it depends
on), with olearn and, when available, with VW 9.11.9 (``python -m vowpalwabbit``). olearn's
results are compared with VW's actual outputs (or the reference files when VW is unavailable or
failed) by VW's own fuzzy float rule; the results go to a JSON file and a markdown report.

    .venv/bin/python scripts/vw_suite.py --vw-tests /path/to/vowpal_wabbit/test

See docs/vw-suite.md (written by this script) for the last results and how they were obtained.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EPSILON = 1e-3  # VW's CI: run_tests.py --fuzzy_compare --epsilon 0.001

# ---------------------------------------------------------------------------------------------
# Scope: the families of VW that olearn never intends to have. A rule matches a test when its
# command names any of the rule's options (the option names of each family are those of
# `vw --help`'s sections for it, VW 9.11.9). Rules are tried in this order; the first wins.
CB = frozenset("""
--cb --cb_adf --cb_explore --cb_explore_adf --cb_type --cb_force_legacy --eval --rank_all --clip_p
--per_model_save_load --cb_to_cbadf --cb_sample --cb_dro --cb_dro_alpha --cb_dro_tau --cb_dro_wmax
--cbify --cbify_cs --cbify_reg --cbify_ldf --cb_discrete --loss_option --loss_report
--loss_01_ratio --loss0 --loss1 --flip_loss_sign --cbzo --policy --cb_min_cost --cb_max_cost
--baseline_challenger_cb --cb_c_alpha --cb_c_tau --ot --multiworld_test --exclude_eval --learn
--graph_feedback --warm_cb --warm_cb_cs --warm_start --warm_start_update --interaction
--interaction_update --corrupt_type_warm_start --corrupt_prob_warm_start --choices_lambda
--lambda_scheme --overwrite_label --sim_bandit
""".split())
EXPLORE = frozenset("""
--epsilon --first --first_only --bag --greedify --cover --psi --nounif --squarecb --gamma_scale
--gamma_exponent --elim --regcb --regcbopt --rnd --rnd_alpha --rnd_invlambda --softmax --lambda
--synthcover --synthcoverpsi --synthcoversize --large_action_space --max_actions --spanner_c
--two_pass_svd --thread_pool_size --block_size --action_cache_slack --explore_eval --multiplier
--target_rate --epsilon_decay --model_count --min_scope --initial_epsilon --constant_epsilon
--epsilon_decay_significance_level --epsilon_decay_audit --bonferroni_denominator
--min_champ_examples --shift_model_bounds --challenger_epsilon
""".split())
CCB_SLATES = frozenset("--ccb_explore_adf --all_slots_loss --ccb_no_slot_index --slates".split())
CATS = frozenset("""
--cats --cats_pdf --cats_tree --tree_bandwidth --cb_explore_pdf --get_pmf --sample_pdf --pmf_to_pdf
""".split())
IGL = frozenset("--experimental_igl --igl".split())
SEARCH = frozenset("""
--entity_cost --relation_cost --relation_none_cost --skip_cost --transition_system --cost_to_go
--one_learner --root_label --search_span_bilou
""".split())  # search tasks' options; every --search* option matches too
LDA = frozenset("--lda --lda_alpha --lda_rho --lda_D --lda_epsilon --math-mode --metrics".split())
KSVM = frozenset("--ksvm --pool_greedy --para_active --pool_size --reprocess".split())
ACTIVE = frozenset("""
--active --simulation --mellowness --active_cover --beta_scale --oracular --cs_active --range_c
--domination --csa_debug
""".split())
AUTOML = frozenset("""
--automl --default_lease --priority_type --priority_challengers --verbose_metrics --csv_trace
--interaction_type --oracle_type --debug_reversed_learn --automl_significance_level
--fixed_significance_level --reward_as_cost
""".split())
MEMORY_TREE = frozenset("""
--emt --emt_tree --emt_leaf --emt_scorer --emt_initial --emt_router --memory_tree
--max_number_of_labels --leaf_example_multiplier --dream_repeats --top_K --learn_at_leaf --oas
--dream_at_update
""".split())
PLT = frozenset("--plt --kary_tree --plt_force_load_legacy_model".split())
JSON_INPUT = frozenset("--json --dsjson --flatbuffer".split())

SCOPE_RULES: list[tuple[str, frozenset[str]]] = [
    ("contextual bandits (--cb*, --cbify*, --cbzo, --warm_cb, ...)", CB),
    ("exploration (--epsilon, --cover, --bag, --squarecb, ...)", EXPLORE),
    ("CCB and slates", CCB_SLATES),
    ("CATS / continuous actions", CATS),
    ("IGL", IGL),
    ("learning to search (--search*)", SEARCH),
    ("--lda", LDA),
    ("--ksvm", KSVM),
    ("active learning (--active, --cs_active, ...)", ACTIVE),
    ("--automl", AUTOML),
    ("memory trees (--emt, --memory_tree)", MEMORY_TREE),
    ("--plt", PLT),
    ("JSON / DSJSON / flatbuffer input", JSON_INPUT),
]
RULE_BASH = "bash_command test"
RULE_CB_FILE = "data or model file of a CB family (cb_*, ccb_*, cbzo*, cats*)"
RULE_DEPENDENCY = "depends on an out-of-scope test"
CB_FILE = re.compile(r"^(cb|ccb|cbzo|cats|slates)[_.-]")
JSON_FILE = re.compile(r"\.(json|dsjson)(\.gz)?$")


def command_tokens(command: str) -> list[str]:
    """The command's arguments, split as VW's runner splits them (shlex, POSIX)."""
    return shlex.split(command)


def option_names(tokens: list[str]) -> set[str]:
    """The long option names a command uses (``--name=value`` counts as ``--name``)."""
    return {tok.split("=", 1)[0] for tok in tokens if tok.startswith("--")}


def option_values(tokens: list[str], names: tuple[str, ...]) -> list[str]:
    """The values given to any of the options ``names`` (``-d x``, ``--data=x``)."""
    values = []
    for i, tok in enumerate(tokens):
        if tok in names and i + 1 < len(tokens):
            values.append(tokens[i + 1])
        elif "=" in tok and tok.split("=", 1)[0] in names:
            values.append(tok.split("=", 1)[1])
    return values


def own_scope_rule(test: dict[str, Any]) -> str | None:
    """The first scope rule that excludes ``test`` by its own command, or None."""
    if "vw_command" not in test:
        return RULE_BASH
    tokens = command_tokens(test["vw_command"])
    opts = option_names(tokens)
    data = option_values(tokens, ("-d", "--data"))
    for name, options in SCOPE_RULES:
        if opts & options:
            return name
        if options is SEARCH and any(o.startswith("--search") for o in opts):
            return name
        if options is JSON_INPUT and any(JSON_FILE.search(f) for f in data):
            return name
    files = data + option_values(tokens, ("-i", "--initial_regressor"))
    if any(CB_FILE.match(os.path.basename(f)) for f in files):
        return RULE_CB_FILE
    return None


def scope_rules(tests: dict[int, dict[str, Any]]) -> dict[int, str | None]:
    """Each test's excluding rule (None: in scope); a dependency out of scope excludes too."""
    rules: dict[int, str | None] = {}
    for tid in sorted(tests):  # dependencies have lower ids
        rule = own_scope_rule(tests[tid])
        if rule is None and any(rules.get(d) for d in tests[tid].get("depends_on", [])):
            rule = RULE_DEPENDENCY
        rules[tid] = rule
    return rules


# ---------------------------------------------------------------------------------------------
# VW's comparison rule (test/run_tests.py: fuzzy_float_compare, is_line_different,
# are_dicts_equal), used with --fuzzy_compare as VW's CI does.
TOKEN_SPLIT = re.compile(r"[ \t:,@=\[\]]+|(?<=\d)-(?=-?\d)")
DELIMITERS = re.compile(r"[:,@\[\]]+")


def is_float(text: str) -> bool:
    """Whether ``text`` parses as a Python float (VW's runner's test)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def floats_close(a_text: str, b_text: str, epsilon: float) -> bool:
    """VW's fuzzy_float_compare: absolute difference, or ratio when |b| > 1."""
    a, b = float(a_text), float(b_text)
    if (math.isinf(a) and math.isinf(b)) or (math.isnan(a) and math.isnan(b)):
        return True
    if abs(a - b) < epsilon:
        return True
    return abs(b) > 1.0 and abs(a / b - 1.0) < epsilon


def line_difference(out: str, ref: str, epsilon: float) -> str | None:
    """Why line ``out`` differs from ``ref`` under VW's fuzzy rule, or None when they agree."""
    out, ref = out.replace("...", ""), ref.replace("...", "")
    out_tokens, ref_tokens = TOKEN_SPLIT.split(out), TOKEN_SPLIT.split(ref)
    if len(out_tokens) != len(ref_tokens):
        return "number of tokens different"
    for o, r in zip(out_tokens, ref_tokens):
        if is_float(o) and is_float(r):
            if not floats_close(o, r, epsilon):
                return f"floats differ: {o} vs {r}"
        elif o != r:
            return f"token differs: {o!r} vs {r!r}"
    if DELIMITERS.findall(out) != DELIMITERS.findall(ref):
        return "delimiters differ"
    return None


def text_lines(text: str) -> list[str]:
    """Lines as VW's runner compares them: the whole text and each line stripped."""
    return [line.strip() for line in text.strip().splitlines()]


# A readable model's (--readable_model, --invert_hash) header lines left out of the comparison:
# the version of VW that wrote it (a reference file's may be an older VW's), and the checksum,
# a hash of the header's lines, which are compared themselves (docs/vw-reference.md, 6.1).
OWN_HEADER = re.compile(r"^(Version|Checksum:) ")


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """The text's lines as VW's runner compares them, with their 1-based numbers, without a
    readable model's Version and Checksum lines."""
    lines = list(enumerate(text_lines(text), 1))
    if not lines or not lines[0][1].startswith("Version "):
        return lines
    return [(n, line) for n, line in lines if not OWN_HEADER.match(line)]


def is_readable_model(lines: list[tuple[int, str]]) -> bool:
    """Whether numbered lines are a --readable_model / --invert_hash file (its Version line
    already left out): a header, then ``:0`` or ``:1``."""
    return any(line in (":0", ":1") for _, line in lines[:12])


def model_parts(lines: list[tuple[int, str]]) -> tuple[list, list]:
    """A readable model's header (with the resume state's ``name value`` lines) and its
    weight lines (``[name:]index:w[ G N]``)."""
    end = next(i for i, (_, line) in enumerate(lines) if line in (":0", ":1"))
    rest = lines[end + 1:]
    weights = [(n, line) for n, line in rest if is_weight_line(line)]
    return lines[: end + 1] + [item for item in rest if item not in weights], weights


WEIGHT = re.compile(r"^\S*?\d+:(\S+)$")


def is_weight_line(line: str) -> bool:
    """Whether a readable model's line is a weight: its first token ends in ``index:value``."""
    found = WEIGHT.match(line.split(" ", 1)[0])
    return bool(found) and is_float(found.group(1))


def first_difference(out_text: str, ref_text: str, epsilon: float) -> dict[str, Any] | None:
    """The first differing line pair of two texts under VW's rule, or None when they agree
    (a readable model's Version and Checksum lines are not compared)."""
    return first_line_difference(numbered_lines(out_text), numbered_lines(ref_text), epsilon)


def first_line_difference(out: list[tuple[int, str]], ref: list[tuple[int, str]],
                          epsilon: float) -> dict[str, Any] | None:
    """The first differing pair of two lists of numbered lines, or None when they agree."""
    for (n, o), (_, r) in zip(out, ref):
        why = line_difference(o, r, epsilon)
        if why:
            return {"line": n, "olearn": o, "expected": r, "why": why}
    if len(out) != len(ref):
        i = min(len(out), len(ref))
        longer = out if len(out) > len(ref) else ref
        return {"line": longer[i][0], "olearn": out[i][1] if i < len(out) else "<end of file>",
                "expected": ref[i][1] if i < len(ref) else "<end of file>",
                "why": f"{len(out)} lines vs {len(ref)}"}
    return None


def json_difference(out: Any, ref: Any, epsilon: float, key: str = "root") -> str | None:
    """VW's are_dicts_equal for .json outputs: why they differ, or None."""
    if type(out) is not type(ref):
        return f"{key}: type {type(out).__name__} vs {type(ref).__name__}"
    if isinstance(ref, float):
        return None if abs(out - ref) < epsilon else f"{key}: {out} vs {ref}"
    if isinstance(ref, dict):
        if set(out) != set(ref):
            return f"{key}: keys differ"
        return next((d for k in ref if (d := json_difference(out[k], ref[k], epsilon, k))), None)
    if isinstance(ref, list):
        if len(out) != len(ref):
            return f"{key}: length {len(out)} vs {len(ref)}"
        pairs = zip(out, ref)
        return next((d for i, (o, r) in enumerate(pairs)
                     if (d := json_difference(o, r, epsilon, f"{key}[{i}]"))), None)
    return None if out == ref else f"{key}: {out!r} vs {ref!r}"


AVERAGE_LOSS = re.compile(r"^average loss = .*$", re.MULTILINE)


def average_loss_line(stderr: str) -> str | None:
    """The last ``average loss = ...`` line of a run's stderr."""
    found = AVERAGE_LOSS.findall(stderr)
    return found[-1].strip() if found else None


# ---------------------------------------------------------------------------------------------
# Running tests.
class Runner:
    """One program that runs the suite's commands (olearn or VW) in its own scratch tree."""

    def __init__(self, name: str, prefix: list[str], base: Path, env: dict[str, str],
                 drop: frozenset[str] = frozenset()):
        self.name, self.prefix, self.base, self.env, self.drop = name, prefix, base, env, drop

    def test_dir(self, tid: int) -> Path:
        """The scratch directory of test ``tid`` for this runner."""
        return self.base / self.name / f"test_{tid}"

    def argv(self, command: str) -> list[str]:
        """The full argument list for one test's vw_command."""
        return self.prefix + [t for t in command_tokens(command) if t not in self.drop]


def prepare_dir(runner: Runner, test: dict[str, Any], ref_dir: Path) -> str | None:
    """Create the test's directory with its input files (VW's create_test_dir); returns the
    input file that could not be found, or None. Outputs of the tests it depends on win over
    the test tree's files of the same name."""
    work = runner.test_dir(test["id"])
    (work / "models").mkdir(parents=True, exist_ok=True)
    deps = [runner.test_dir(d) for d in test.get("depends_on", [])]
    for name in test.get("input_files", []):
        candidates = [d / name for d in deps] + [d / os.path.basename(name) for d in deps]
        found = next((c for c in candidates + [ref_dir / name] if c.is_file()), None)
        if found is None:
            return name
        dest = work / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            dest.unlink()
        shutil.copy(found, dest)
    return None


def run_command(argv: list[str], cwd: Path, env: dict[str, str], timeout: float
                ) -> dict[str, Any]:
    """Run one command; returns rc (None on timeout), stdout, stderr and seconds."""
    start = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, exc.stdout, exc.stderr
    return {"rc": rc, "stdout": (out or b"").decode("utf-8", "ignore"),
            "stderr": (err or b"").decode("utf-8", "ignore"),
            "secs": round(time.monotonic() - start, 2)}


def run_test(runner: Runner, test: dict[str, Any], ref_dir: Path, timeout: float,
             retries: int) -> dict[str, Any]:
    """Run one test with one runner in its directory; logs go to <base>/logs/<runner>/."""
    missing = prepare_dir(runner, test, ref_dir)
    if missing:
        return {"rc": None, "stdout": "", "stderr": "", "secs": 0.0, "missing_input": missing}
    argv = runner.argv(test["vw_command"])
    for attempt in range(retries + 1):
        result = run_command(argv, runner.test_dir(test["id"]), runner.env, timeout)
        result["attempts"] = attempt + 1
        if result["rc"] is not None:
            break
    logs = runner.base / "logs" / runner.name
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"{test['id']}.stderr").write_text(result["stderr"])
    (logs / f"{test['id']}.stdout").write_text(result["stdout"])
    return result


def run_all(runners: list[Runner], tests: list[dict[str, Any]], ref_dir: Path,
            args: argparse.Namespace) -> dict[str, dict[int, dict[str, Any]]]:
    """Run every test with every runner, `args.jobs` at a time, each test after the tests it
    depends on (for the same runner); a test whose dependency failed is not run."""
    results: dict[str, dict[int, dict[str, Any]]] = {r.name: {} for r in runners}
    pending = [(r, t) for t in tests for r in runners]
    running: dict[Future, tuple[Runner, dict[str, Any]]] = {}
    total, finished = len(pending), 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        while pending or running:
            before = len(pending)
            for item in list(pending):
                if len(running) >= args.jobs:
                    break
                runner, test = item
                state = dependency_state(results[runner.name], test)
                if state == "wait":
                    continue
                pending.remove(item)
                if state is not None:
                    results[runner.name][test["id"]] = {"failed_dependency": state}
                    finished += 1
                    continue
                retries = args.retries if runner.name == "olearn" else 0
                future = pool.submit(run_test, runner, test, ref_dir, args.timeout, retries)
                running[future] = item
            if not running:
                if len(pending) == before:  # waiting on tests that are not in the suite
                    for runner, test in pending:
                        results[runner.name][test["id"]] = {"failed_dependency": "missing"}
                    pending.clear()
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                runner, test = running.pop(future)
                results[runner.name][test["id"]] = future.result()
                finished += 1
                log_progress(finished, total, runner.name, test["id"], future.result())
    return results


def dependency_state(done: dict[int, dict[str, Any]], test: dict[str, Any]) -> Any:
    """'wait' while a dependency is unfinished, the first failed dependency's id, or None."""
    for dep in test.get("depends_on", []):
        if dep not in done:
            return "wait"
        if done[dep].get("rc") != 0:
            return dep
    return None


def log_progress(finished: int, total: int, name: str, tid: int, result: dict[str, Any]) -> None:
    """One line per finished run on stdout."""
    rc = result.get("rc")
    print(f"[{finished}/{total}] {name} test {tid}: rc={rc} {result.get('secs', 0)}s",
          flush=True)


# ---------------------------------------------------------------------------------------------
# Classifying olearn's runs and comparing them with VW's.
UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*?)(?: \(see olearn --help\))?$")
BAD_ARGUMENT = re.compile(r"argument (\S+): (invalid choice: '[^']*'|[^(]*)")
ERROR_LINE = re.compile(r"^olearn: error: (.*)$", re.MULTILINE)


def refusal(stderr: str) -> tuple[str, list[str]]:
    """olearn's usage error: the message and the option(s) (or option message) it names."""
    found = ERROR_LINE.findall(stderr)
    message = found[-1].strip() if found else last_line(stderr)
    unknown = UNRECOGNIZED.search(message)
    if unknown:
        names = [t.split("=", 1)[0] for t in unknown.group(1).split()
                 if re.match(r"--?[A-Za-z]", t)]
        return message, list(dict.fromkeys(names)) or [message]
    bad = BAD_ARGUMENT.search(message)
    if bad:
        long_name = bad.group(1).split("/")[-1]
        what = bad.group(2).strip()
        choice = re.match(r"invalid choice: '([^']*)'", what)
        return message, [f"{long_name} {choice.group(1)}" if choice else f"{long_name}: {what}"]
    return message, [message[:90]]


def last_line(text: str) -> str:
    """The last non-empty line of a text ('' if none)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def olearn_status(result: dict[str, Any], timeout: float) -> dict[str, Any]:
    """refused / dependency / error / ran for one olearn run."""
    if "failed_dependency" in result:
        dep = result["failed_dependency"]
        return {"status": "dependency", "dependency": dep,
                "reason": f"depends on test {dep}, which failed for olearn"}
    if result.get("missing_input"):
        return {"status": "error",
                "reason": f"input file {result['missing_input']} not found (not written by "
                          "the test it depends on)"}
    rc = result["rc"]
    if rc is None:
        return {"status": "error", "reason": f"timeout after {timeout:g} s"}
    if rc == 2 and ERROR_LINE.search(result["stderr"]):
        message, options = refusal(result["stderr"])
        return {"status": "refused", "options": options, "reason": message}
    if rc != 0:
        return {"status": "error", "reason": f"exit {rc}: {last_line(result['stderr'])[:200]}"}
    return {"status": "ran"}


def vw_ok(result: dict[str, Any] | None) -> bool:
    """Whether VW ran the test and exited with 0."""
    return bool(result) and result.get("rc") == 0


# pyvw has no --onethread: its parser thread runs ahead of learning and counts the passes it
# has read, so a learner that reads the pass counter per example (--svrg's stages) sees later
# passes than the vw binary with --onethread (pyvw's test 644, one pass, "takes steps" from its
# second example); VW's reference files were made with --onethread and are compared instead.
PASS_COUNTERS = frozenset({"--svrg"})


def vw_comparable(test: dict[str, Any], runner: Runner | None) -> bool:
    """Whether VW's run of ``test`` stands for VW: not when ``runner`` dropped --onethread from
    a command whose results depend on it."""
    words = set(test["vw_command"].split())
    return not (runner is not None and "--onethread" in runner.drop & words
                and PASS_COUNTERS & words)


def baseline_text(test: dict[str, Any], output: str, vw: dict[str, Any] | None,
                  vw_dir: Path | None, ref_dir: Path) -> str | None:
    """What olearn's ``output`` (stderr, stdout or a file) is compared with: VW's own output
    when VW ran the test, else the test's reference file; None when there is none."""
    if vw_ok(vw):
        if output in ("stderr", "stdout"):
            return vw[output]
        path = vw_dir / output
    elif output in test["diff_files"]:
        path = ref_dir / test["diff_files"][output]
    else:
        return None
    return path.read_text("utf-8", "ignore") if path.is_file() else None


def compare_file(name: str, ol_path: Path, expected: str, is_json: bool,
                 epsilon: float) -> dict[str, Any]:
    """Compare one output file of olearn's with the expected text."""
    if not ol_path.is_file():
        return {"file": name, "same": False, "why": "olearn wrote no such file"}
    text = ol_path.read_text("utf-8", "ignore")
    if is_json:
        try:
            why = json_difference(json.loads(text or "{}"), json.loads(expected or "{}"), epsilon)
        except ValueError as exc:
            why = f"not JSON: {exc}"
        return {"file": name, "same": why is None, "why": why}
    out, ref = numbered_lines(text), numbered_lines(expected)
    if is_readable_model(out) and is_readable_model(ref):
        return compare_model(name, out, ref, epsilon)
    diff = first_line_difference(out, ref, epsilon)
    return {"file": name, "same": diff is None, **({"first_difference": diff} if diff else {})}


def compare_model(name: str, out: list[tuple[int, str]], ref: list[tuple[int, str]],
                  epsilon: float) -> dict[str, Any]:
    """Compare two readable models' headers and weights apart: the first difference of the
    weights is reported when there is one, else the header's."""
    (out_head, out_weights), (ref_head, ref_weights) = model_parts(out), model_parts(ref)
    weights = first_line_difference(out_weights, ref_weights, epsilon)
    header = first_line_difference(out_head, ref_head, epsilon)
    item: dict[str, Any] = {"file": name, "same": weights is None and header is None,
                            "weights_same": weights is None, "header_same": header is None}
    if weights or header:
        item["part"] = "weights" if weights else "header"
        item["first_difference"] = weights or header
    return item


def compare_loss(ol_stderr: str, expected_stderr: str | None, epsilon: float
                 ) -> dict[str, Any] | None:
    """Compare the final ``average loss`` lines; None when neither run printed one."""
    expected = average_loss_line(expected_stderr or "")
    got = average_loss_line(ol_stderr)
    if expected is None and got is None:
        return None
    if expected is None or got is None:
        diff = {"line": 0, "olearn": got or "<none>", "expected": expected or "<none>",
                "why": "average loss line missing"}
        return {"file": "average loss", "same": False, "first_difference": diff}
    why = line_difference(got, expected, epsilon)
    item: dict[str, Any] = {"file": "average loss", "same": why is None}
    if why:
        item["first_difference"] = {"line": 0, "olearn": got, "expected": expected, "why": why}
    return item


def compare_test(test: dict[str, Any], ol: dict[str, Any], vw: dict[str, Any] | None,
                 ol_dir: Path, vw_dir: Path | None, ref_dir: Path, epsilon: float
                 ) -> dict[str, Any]:
    """match / differ / no-compare for a test olearn ran, with each compared item."""
    items = []
    stderr = baseline_text(test, "stderr", vw, vw_dir, ref_dir)
    loss = compare_loss(ol["stderr"], stderr, epsilon) if stderr is not None else None
    if loss:
        items.append(loss)
    for output, ref_file in test["diff_files"].items():
        if output in ("stderr", "stdout"):
            continue
        expected = baseline_text(test, output, vw, vw_dir, ref_dir)
        if expected is None:
            continue
        items.append(compare_file(output, ol_dir / output, expected, ref_file.endswith(".json"),
                                  epsilon))
    expected_out = baseline_text(test, "stdout", vw, vw_dir, ref_dir)
    stdout_same = (None if expected_out is None
                   else first_difference(ol["stdout"], expected_out, epsilon) is None)
    status = "no-compare" if not items else (
        "match" if all(i["same"] for i in items) else "differ")
    result = {"status": status, "basis": "vw" if vw_ok(vw) else "reference", "compared": items,
              "stdout_same": stdout_same}
    if status == "differ":
        first = next(i for i in items if not i["same"])
        result["reason"] = describe_item(first)
    elif status == "no-compare":
        result["reason"] = "no average loss line and no output file to compare"
    return result


def describe_item(item: dict[str, Any]) -> str:
    """A one-line reason for a differing item: the file and its first differing lines."""
    diff = item.get("first_difference")
    if not diff:
        return f"{item['file']}: {item.get('why')}"
    where = f" line {diff['line']}" if diff["line"] else ""
    part = {"weights": " (weights)", "header": " (header; the weights agree)"}.get(
        item.get("part", ""), "")
    return (f"{item['file']}{where}{part}: olearn `{diff['olearn'][:70]}` vs "
            f"`{diff['expected'][:70]}` ({diff['why']})")


def classify(test: dict[str, Any], runs: dict[str, dict[int, dict[str, Any]]],
             runners: dict[str, Runner], ref_dir: Path, args: argparse.Namespace
             ) -> dict[str, Any]:
    """The full record of one in-scope test: olearn's status, VW's run, the comparison."""
    tid = test["id"]
    ol = runs["olearn"][tid]
    vw = runs["vw"].get(tid) if "vw" in runs else None
    record: dict[str, Any] = {"olearn": olearn_status(ol, args.timeout)}
    record["olearn"].update({k: ol.get(k) for k in ("rc", "secs", "attempts") if k in ol})
    if vw is not None:
        record["vw"] = {k: vw.get(k) for k in ("rc", "secs", "missing_input",
                                               "failed_dependency") if vw.get(k) is not None}
        if not vw_ok(vw):
            record["vw"]["stderr_tail"] = last_line(vw.get("stderr", ""))[:200]
    if record["olearn"]["status"] == "ran":
        vw_dir = runners["vw"].test_dir(tid) if "vw" in runners else None
        basis = vw if vw_comparable(test, runners.get("vw")) else None
        record["compare"] = compare_test(test, ol, basis, runners["olearn"].test_dir(tid),
                                         vw_dir, ref_dir, args.epsilon)
        record["status"] = record["compare"]["status"]
        record["reason"] = record["compare"].get("reason", "")
    else:
        record["status"] = record["olearn"]["status"]
        record["reason"] = record["olearn"]["reason"]
    return record


# ---------------------------------------------------------------------------------------------
# Command line, set-up and reports.
def parse_ids(text: str | None) -> set[int] | None:
    """``1,2,5-9`` -> {1, 2, 5, 6, 7, 8, 9}; None selects every test."""
    if not text:
        return None
    ids: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        ids.update(range(int(low), int(high or low) + 1))
    return ids


def with_dependencies(ids: set[int], tests: dict[int, dict[str, Any]]) -> set[int]:
    """``ids`` and every test they depend on, transitively."""
    todo, seen = list(ids), set()
    while todo:
        tid = todo.pop()
        if tid in seen or tid not in tests:
            continue
        seen.add(tid)
        todo.extend(tests[tid].get("depends_on", []))
    return seen


def default_vw() -> str:
    """``<this python> -m vowpalwabbit`` when the module is importable, else ''."""
    if importlib.util.find_spec("vowpalwabbit") is None:
        return ""
    return f"{shlex.quote(sys.executable)} -m vowpalwabbit"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--vw-tests", required=True, type=Path,
                   help="the test/ directory of a VW checkout (holds core.vwtest.json)")
    p.add_argument("--olearn", default=str(Path(sys.executable).parent / "olearn"),
                   help="the olearn command")
    p.add_argument("--vw", default=default_vw(),
                   help="the VW command ('' or 'none': compare with the reference files)")
    p.add_argument("--ids", help="tests to run, e.g. 1,2,5-9 (their dependencies run too)")
    p.add_argument("--jobs", type=int, default=2, help="runs at a time")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("--retries", type=int, default=1,
                   help="reruns of an olearn run that timed out (a first run may compile)")
    p.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                   help="VW's fuzzy float tolerance (VW's CI uses 1e-3)")
    p.add_argument("--scratch", type=Path, default=Path("/tmp/vw-suite"),
                   help="scratch directory (emptied first)")
    p.add_argument("--olearn-no-build", action="store_true",
                   help="set OLEARN_NO_BUILD=1: numba only, no start-up module build (useful "
                        "while olearn's sources change)")
    p.add_argument("--out-json", type=Path, help="write every result here")
    p.add_argument("--out-md", type=Path, default=ROOT / "docs" / "vw-suite.md",
                   help="the markdown report")
    return p.parse_args(argv)


def make_runners(args: argparse.Namespace) -> list[Runner]:
    """The olearn runner and, when a VW command is given, the VW runner."""
    env = dict(os.environ, PYTHONSAFEPATH="1")  # `python -m` must not import from the test dir
    ol_env = dict(env, OLEARN_NO_BUILD="1") if args.olearn_no_build else env
    runners = [Runner("olearn", shlex.split(args.olearn), args.scratch, ol_env)]
    if args.vw and args.vw != "none":
        prefix = shlex.split(args.vw)
        # pyvw rejects --onethread (the vw binary's own option; it changes no output)
        drop = frozenset({"--onethread"}) if prefix[-1:] == ["vowpalwabbit"] else frozenset()
        runners.append(Runner("vw", prefix, args.scratch, env, drop))
    return runners


def vw_version(runner: Runner | None) -> str:
    """VW's ``--version`` line, or 'not available'."""
    if runner is None:
        return "not available (compared with the reference files)"
    out = run_command(runner.prefix + ["--version"], Path.cwd(), runner.env, 120)
    return last_line(out["stdout"].splitlines()[0] if out["stdout"] else out["stderr"])


def warm_up(runner: Runner) -> None:
    """Run olearn once on a two-line file so that a kernel build happens before the timed runs."""
    work = runner.base / "warm"
    work.mkdir(parents=True, exist_ok=True)
    (work / "warm.vw").write_text("1 | a b\n-1 | c\n")
    out = run_command(runner.prefix + ["-d", "warm.vw", "--quiet"], work, runner.env, 3600)
    print(f"olearn warm-up: rc={out['rc']} in {out['secs']} s", flush=True)


def git_describe() -> str:
    """The olearn checkout's commit (``git describe --always --dirty``)."""
    out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the suite and write the reports."""
    args = parse_args(argv)
    ref_dir = args.vw_tests.resolve()
    tests = {t["id"]: t for t in json.loads((ref_dir / "core.vwtest.json").read_text())}
    rules = scope_rules(tests)
    print(f"{len(tests)} tests; in scope: {sum(r is None for r in rules.values())}")
    selected = parse_ids(args.ids)
    run_ids = with_dependencies(selected, tests) if selected else set(tests)
    in_scope = [tests[i] for i in sorted(run_ids) if rules[i] is None]
    args.scratch = args.scratch.resolve()
    for sub in ("olearn", "vw", "logs"):
        shutil.rmtree(args.scratch / sub, ignore_errors=True)
    runners = make_runners(args)
    by_name = {r.name: r for r in runners}
    version = vw_version(by_name.get("vw"))
    print(f"VW: {version}; running {len(in_scope)} in-scope tests", flush=True)
    warm_up(by_name["olearn"])
    start = time.monotonic()
    runs = run_all(runners, in_scope, ref_dir, args)
    records = {t["id"]: classify(t, runs, by_name, ref_dir, args) for t in in_scope}
    given = sys.argv[1:] if argv is None else argv
    meta = {"command": shlex.join(["python", "scripts/vw_suite.py"] + given),
            "vw_version": version, "olearn_commit": git_describe(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "epsilon": args.epsilon, "minutes": round((time.monotonic() - start) / 60, 1),
            "ids": args.ids or "all", "tests": len(tests)}
    report = build_report(meta, tests, rules, records, run_ids)
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=1) + "\n")
    args.out_md.write_text(markdown(report, tests))
    print_summary(report)
    return 0


def pct(part: int, whole: int) -> float:
    """``part`` as a percentage of ``whole``, one decimal."""
    return round(100 * part / whole, 1) if whole else 0.0


def totals(records: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Counts of the statuses and the headline rates."""
    count = Counter(r["status"] for r in records.values())
    ran = sum(count[s] for s in ("match", "differ", "no-compare"))
    comparable = count["match"] + count["differ"]
    return {"in_scope": len(records), "ran": ran, "ran_pct": pct(ran, len(records)),
            "comparable": comparable, "match": count["match"],
            "match_pct_of_comparable": pct(count["match"], comparable),
            "match_pct_of_in_scope": pct(count["match"], len(records)),
            "statuses": dict(sorted(count.items())),
            "differ_header_only": sum(
                any(i.get("part") == "header" for i in r.get("compare", {}).get("compared", []))
                and all(i["same"] or i.get("part") == "header"
                        for i in r.get("compare", {}).get("compared", []))
                for r in records.values() if r["status"] == "differ"),
            "stdout_same": sum(bool(r.get("compare", {}).get("stdout_same"))
                               for r in records.values())}


def missing_options(records: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """The options olearn refused, with the tests each blocks, most blocking first."""
    blocks: dict[str, list[int]] = {}
    alone: Counter = Counter()
    for tid, rec in records.items():
        options = rec["olearn"].get("options") if rec["status"] == "refused" else None
        for option in options or []:
            blocks.setdefault(option, []).append(tid)
        if options and len(options) == 1:
            alone[options[0]] += 1
    rows = [{"option": o, "tests": len(ids), "only_blocker": alone[o], "ids": sorted(ids)}
            for o, ids in blocks.items()]
    return sorted(rows, key=lambda r: (-r["tests"], -r["only_blocker"], r["option"]))


def build_report(meta: dict[str, Any], tests: dict[int, dict[str, Any]],
                 rules: dict[int, str | None], records: dict[int, dict[str, Any]],
                 run_ids: set[int]) -> dict[str, Any]:
    """Everything the JSON file holds."""
    scope = Counter(rule for tid, rule in rules.items() if rule)
    return {"meta": meta, "scope": {"in_scope": sum(r is None for r in rules.values()),
                                    "excluded": dict(scope.most_common())},
            "totals": totals(records), "missing_options": missing_options(records),
            "tests": {str(tid): {"command": tests[tid].get("vw_command"), **rec}
                      for tid, rec in sorted(records.items())},
            "out_of_scope": {str(t): rules[t] for t in sorted(run_ids) if rules[t]}}


def cell(text: Any, limit: int = 0) -> str:
    """Text made safe for a markdown table cell, cut to ``limit`` characters when given."""
    text = str(text if text is not None else "").replace("\n", " ")
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def markdown(report: dict[str, Any], tests: dict[int, dict[str, Any]]) -> str:
    """docs/vw-suite.md."""
    meta, tot = report["meta"], report["totals"]
    lines = [
        "# VW's core test suite with olearn", "",
        "Generated by `scripts/vw_suite.py`; regenerate it with a VW checkout's `test/` tree "
        "(`git clone https://github.com/VowpalWabbit/vowpal_wabbit`; the VW 9.11.9 comparison "
        "needs the `vowpalwabbit` package of the virtualenv), in 5 to 10 minutes on 2 cores:",
        "",
        "```", ".venv/bin/python scripts/vw_suite.py --vw-tests /path/to/vowpal_wabbit/test "
        "--out-json vw-suite.json", "```", "",
        f"- command: `{meta['command']}`",
        f"- VW: {meta['vw_version']}; olearn: commit {meta['olearn_commit']}; "
        f"{meta['date']}; {meta['minutes']} minutes",
        f"- tests run: {meta['ids']} (`test/core.vwtest.json` has {meta['tests']})",
        "- each test runs in its own directory per program, its input files copied in from the "
        "test tree or from the directories of the tests it depends on, as VW's "
        "`test/run_tests.py` does; olearn's final `average loss` line and every output file "
        "but stdout/stderr are compared with VW 9.11.9's own outputs of the same command "
        "(with the reference files when VW fails it), by VW's fuzzy float rule "
        f"(`--fuzzy_compare`, epsilon {meta['epsilon']:g} as in VW's CI: floats agree when "
        "their difference, or for |x| > 1 their ratio's distance from 1, is below epsilon)",
        "- a readable model (`--readable_model`, `--invert_hash`) is compared without its "
        "`Version` line (a reference file's may be an older VW's) and its `Checksum` line (a "
        "hash of the header lines, which are compared themselves: "
        "[vw-reference.md](vw-reference.md#61---readable_model----invert_hash-layout)); "
        "its weights are compared apart from its header, and a difference in the weights is "
        "reported first",
        "- VW runs as `python -m vowpalwabbit` (pyvw), which rejects the `vw` binary's "
        "`--onethread`: it is left out of VW's command (it changes no output, but for "
        "`--svrg`, whose stages count the passes pyvw's parser thread has read: those tests "
        "are compared with VW's reference files, made with `--onethread`); olearn gets "
        "every test's command unchanged", "",
        "## Totals", "",
        "| in scope | ran | ran % | comparable | match | match % of comparable "
        "| match % of in scope |", "|---|---|---|---|---|---|---|",
        f"| {tot['in_scope']} | {tot['ran']} | {tot['ran_pct']} | {tot['comparable']} "
        f"| {tot['match']} | {tot['match_pct_of_comparable']} | {tot['match_pct_of_in_scope']} |",
        "", "By status: " + ", ".join(f"{k} {v}" for k, v in tot["statuses"].items()) + ".",
        f"Of the {tot['statuses'].get('differ', 0)} `differ`, {tot['differ_header_only']} "
        "differ only in a readable model's header (its weights agree).",
        f"Not part of the status: olearn's stdout agreed with VW's in {tot['stdout_same']} of "
        f"the {tot['ran']} tests it ran.",
        "`refused`: olearn's usage error (exit 2, e.g. an unknown option); `dependency`: a test "
        "it depends on failed for olearn; `error`: another failure or a timeout; `no-compare`: "
        "ran, with no average loss line and no output file to compare.", "",
    ]
    lines += scope_section(report)
    lines += options_section(report)
    lines += rows_section(report)
    return "\n".join(lines) + "\n"


def scope_section(report: dict[str, Any]) -> list[str]:
    """The scope rules and how many tests each excludes."""
    excluded = report["scope"]["excluded"]
    by_options = sum(n for rule, n in excluded.items() if rule not in (RULE_BASH, RULE_CB_FILE,
                                                                          RULE_DEPENDENCY))
    lines = ["## Scope", "",
             f"{report['scope']['in_scope']} of {report['meta']['tests']} tests are in scope. "
             "A test is out of scope when it is a `bash_command`, when its command uses an "
             "option of a family olearn never intends (the options of each family are those "
             "of VW 9.11.9's `--help` sections for it, listed in the script; "
             f"{by_options} tests), when it reads a CB family's data or model file, or when "
             "it depends on an out-of-scope test (a model that test trained). The first "
             "matching rule counts.", "",
             "| rule | tests excluded |", "|---|---|"]
    lines += [f"| {cell(rule)} | {n} |" for rule, n in excluded.items()]
    return lines + [""]


def options_section(report: dict[str, Any]) -> list[str]:
    """The options olearn refused and how many in-scope tests each blocks."""
    rows = report["missing_options"]
    lines = ["## Missing options", "",
             "What olearn's usage error names (an unknown option, a value it does not take, "
             "or a combination it refuses), with the in-scope tests it appears in (`only`: "
             "the tests it alone blocks).", "",
             "| option | tests | only | ids |", "|---|---|---|---|"]
    for row in (r for r in rows if r["tests"] > 1):
        ids = ", ".join(map(str, row["ids"][:12])) + (", …" if len(row["ids"]) > 12 else "")
        lines.append(f"| `{cell(row['option'], 80)}` | {row['tests']} | {row['only_blocker']} "
                     f"| {ids} |")
    single = [f"`{r['option'][:80]}` ({r['ids'][0]}{'' if r['only_blocker'] else ', with others'})"
              for r in rows if r["tests"] == 1]
    if single:
        lines += ["", "Named by one test each: " + ", ".join(single) + "."]
    return lines + [""]


STATUS_ORDER = {"differ": 0, "error": 1, "dependency": 2, "no-compare": 3, "refused": 4}


def rows_section(report: dict[str, Any]) -> list[str]:
    """One row per in-scope test that did not match."""
    rows = [(int(tid), rec) for tid, rec in report["tests"].items() if rec["status"] != "match"]
    rows.sort(key=lambda r: (STATUS_ORDER.get(r[1]["status"], 9), r[0]))
    lines = ["## Tests that did not match", "",
             "| id | status | reason | command |", "|---|---|---|---|"]
    for tid, rec in rows:
        reason = rec["reason"]
        if rec["status"] == "refused":
            reason = ", ".join(rec["olearn"]["options"])
        lines.append(f"| {tid} | {rec['status']} | {cell(reason, 150)} "
                     f"| `{cell(rec['command'], 70)}` |")
    return lines


def print_summary(report: dict[str, Any]) -> None:
    """The totals, the top missing options and the differing tests, on stdout."""
    print(json.dumps(report["totals"], indent=1))
    for row in report["missing_options"][:15]:
        print(f"  {row['option']}: {row['tests']} (only {row['only_blocker']})")
    for tid, rec in report["tests"].items():
        if rec["status"] in ("differ", "error"):
            print(f"  {tid} {rec['status']}: {rec['reason']}")


if __name__ == "__main__":
    sys.exit(main())
