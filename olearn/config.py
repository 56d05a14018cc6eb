"""Every option of a run, validated once; shared by the CLI, the Python API and model files."""
from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass, field

from olearn.errors import OptionError
from olearn.features.interactions import terms_of
from olearn.losses import BY_NAME as LOSSES, Loss
from olearn.optim.gd import LINKS

FORMATS = ("auto", "vw", "svmlight")
# Options that change features or predictions: a model file keeps them and -i restores them.
MODEL_OPTIONS = ("bit_precision", "learning_rate", "power_t", "initial_t", "sgd", "adaptive",
                 "normalized", "invariant", "loss_function", "quantile_tau", "link", "binary",
                 "min_prediction", "max_prediction", "l1", "l2", "noconstant", "hash", "hash_seed",
                 "quadratic", "cubic", "interactions", "permutations", "stage_poly",
                 "sched_exponent", "batch_sz", "batch_sz_no_doubling", "poly_heuristic",
                 "eg", "boa", "saew", "radius", "saew_sub", "saew_d0", "saew_alpha", "saew_B",
                 "saew_C", "saew_a", "saew_b", "saew_center", "saew_output", "saew_calibrate",
                 "saew_grid_d0", "saew_grid_alpha", "saew_grid_radius", "saew_grid_B")
HASHES = ("strings", "all")
POLY_HEURISTICS = ("weight", "ssm")
EXPERT_LEARNERS = ("eg", "boa", "saew")  # the options that replace gradient descent
SAEW_SUBROUTINES = ("boa", "eg")
SAEW_CENTERS = ("average", "last")
SAEW_OUTPUTS = ("iterate", "average", "sparse")
# chosen by scripts/saew_experiment.py (BENCHMARKS.md, "SAEW")
SAEW_DEFAULTS = {"saew_d0": 5, "saew_C": 0.5, "saew_center": "last"}
MAX_COUNT = 2 ** 32 - 1  # VW's counters are 32-bit; every count stays exact in float64 params
MAX_GRID = 16  # --saew_calibrate's d0 values 1, 4, ..., 4^15 = 2^30 cover -b 30
# Integer options: lowest and highest value.
INT_RANGES = {"bit_precision": (1, 30), "passes": (1, MAX_COUNT),
              "holdout_period": (1, MAX_COUNT), "holdout_after": (0, MAX_COUNT),
              "early_terminate": (1, MAX_COUNT), "batch_sz": (0, MAX_COUNT),
              "dask_partitions": (0, MAX_COUNT), "saew_d0": (1, MAX_COUNT),
              "saew_grid_d0": (1, MAX_GRID), "saew_grid_alpha": (1, MAX_GRID),
              "saew_grid_radius": (1, MAX_GRID), "saew_grid_B": (1, MAX_GRID),
              "hash_seed": (-MAX_COUNT, MAX_COUNT)}  # VW reads -N as 2^32 - N
# Float options: finite, from a lowest value (allowed or not) to below a highest one.
FLOAT_RANGES = {"learning_rate": (0.0, False, math.inf), "power_t": (0.0, True, math.inf),
                "initial_t": (0.0, True, math.inf), "quantile_tau": (0.0, False, 1.0),
                "min_prediction": (-math.inf, True, math.inf),
                "max_prediction": (-math.inf, True, math.inf),
                "l1": (0.0, True, math.inf), "l2": (0.0, True, math.inf),
                "sched_exponent": (0.0, True, math.inf), "radius": (0.0, False, math.inf),
                "saew_alpha": (0.0, False, math.inf), "saew_B": (0.0, True, math.inf),
                "saew_C": (0.0, False, math.inf), "saew_a": (0.0, True, math.inf),
                "saew_b": (0.0, True, math.inf), "decay_learning_rate": (0.0, False, math.inf)}
# May be None: VW's default for the update rule, or no fixed prediction range.
OPTIONAL_NUMBERS = ("learning_rate", "initial_t", "min_prediction", "max_prediction")
_SHORT_FLAGS = {"bit_precision": "-b", "learning_rate": "-l", "quadratic": "-q"}


def _flag(name: str) -> str:
    """An option as the command line names it (``-b/--bit_precision``)."""
    short = _SHORT_FLAGS.get(name)
    return f"{short}/--{name}" if short else f"--{name}"


def _describe(low: float, low_allowed: bool, high: float) -> str:
    if high < math.inf:
        return f"in ({low:g}, {high:g})"
    if low == -math.inf:
        return "a finite number"
    return f"finite and {'>=' if low_allowed else '>'} {low:g}"


def _terms_list(name: str, terms: object) -> list:
    """-q/--cubic/--interactions terms as a list (one string is one term)."""
    if isinstance(terms, str):
        return [terms]
    try:
        return list(terms)
    except TypeError:
        raise OptionError(f"{_flag(name)} expects strings of namespace letters, "
                          f"got {terms!r}") from None


@dataclass
class Config:
    """Options as VW names them; ``None`` means "VW's default for this configuration"."""

    data: list[str] = field(default_factory=list)
    format: str = "auto"
    bit_precision: int = 18
    learning_rate: float | None = None
    power_t: float = 0.5
    initial_t: float | None = None
    sgd: bool = False
    adaptive: bool = False
    normalized: bool = False
    invariant: bool = False
    loss_function: str = "squared"
    quantile_tau: float = 0.5
    link: str = "identity"
    binary: bool = False
    min_prediction: float | None = None
    max_prediction: float | None = None
    l1: float = 0.0
    l2: float = 0.0
    noconstant: bool = False
    quadratic: list[str] = field(default_factory=list)
    cubic: list[str] = field(default_factory=list)
    interactions: list[str] = field(default_factory=list)
    permutations: bool = False
    stage_poly: bool = False
    sched_exponent: float = 1.0
    batch_sz: int = 1000
    batch_sz_no_doubling: bool = False
    poly_heuristic: str = "weight"
    eg: bool = False
    boa: bool = False
    saew: bool = False
    radius: float = 1.0
    saew_sub: str = "boa"
    saew_d0: int = SAEW_DEFAULTS["saew_d0"]
    saew_alpha: float = 1.0
    saew_B: float = 0.0
    saew_C: float = SAEW_DEFAULTS["saew_C"]
    saew_a: float = 0.0
    saew_b: float = 0.0
    saew_center: str = SAEW_DEFAULTS["saew_center"]
    saew_output: str = "iterate"
    saew_calibrate: bool = False
    saew_grid_d0: int = 3
    saew_grid_alpha: int = 3
    saew_grid_radius: int = 3
    saew_grid_B: int = 3
    leave_duplicate_interactions: bool = False
    hash: str = "strings"
    hash_seed: int = 0
    predictions: str | None = None
    raw_predictions: str | None = None
    quiet: bool = False
    audit: bool = False
    progress: str | None = None
    strict_parse: bool = False
    final_regressor: str | None = None
    readable_model: str | None = None
    invert_hash: str | None = None
    predict_only_model: bool = False
    initial_regressor: str | None = None
    testonly: bool = False
    passes: int = 1
    cache: bool = False
    cache_file: str | None = None
    kill_cache: bool = False
    holdout_off: bool = False
    holdout_period: int = 10
    holdout_after: int = 0
    early_terminate: int = 3
    decay_learning_rate: float = 1.0
    save_per_pass: bool = False
    dask: str | None = None  # train on a Dask cluster (olearn/distributed.py)
    dask_partitions: int = 0
    explicit: frozenset = frozenset()  # options the user gave (the rest are defaults)

    def __post_init__(self) -> None:
        self._check_numbers()
        for name, choices in (("format", FORMATS), ("hash", HASHES),
                              ("loss_function", tuple(LOSSES)), ("link", LINKS),
                              ("poly_heuristic", POLY_HEURISTICS), ("saew_sub", SAEW_SUBROUTINES),
                              ("saew_center", SAEW_CENTERS), ("saew_output", SAEW_OUTPUTS)):
            if getattr(self, name) not in choices:
                raise OptionError(f"--{name} must be one of {', '.join(choices)}, "
                                  f"got {getattr(self, name)!r}")
        if (self.min_prediction is not None and self.max_prediction is not None
                and not self.min_prediction < self.max_prediction):
            raise OptionError(f"--min_prediction ({self.min_prediction:g}) must be below "
                              f"--max_prediction ({self.max_prediction:g})")
        self._check_experts()
        self.progress_add, self.progress_arg = self._parse_progress(self.progress)
        for name in ("quadratic", "cubic", "interactions"):
            setattr(self, name, _terms_list(name, getattr(self, name)))
        self.terms = terms_of(self.quadratic, self.cubic, self.interactions, self.permutations,
                              self.leave_duplicate_interactions,
                              lambda text: self.quiet or sys.stderr.write(text + "\n"))

    def _check_numbers(self) -> None:
        """Every numeric option is a number of its type in its range (NaN and infinities fail
        every check), stored as a plain int or float (model files keep them as JSON)."""
        for name, (low, high) in INT_RANGES.items():
            value = getattr(self, name)
            if (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                    or not low <= value <= high):
                raise OptionError(f"{_flag(name)} must be an integer from {low} to {high}, "
                                  f"got {value!r}")
            setattr(self, name, int(value))
        self.hash_seed %= 1 << 32  # VW reads it as a uint32: -1 is 2^32 - 1
        for name, (low, low_allowed, high) in FLOAT_RANGES.items():
            value = getattr(self, name)
            if value is None and name in OPTIONAL_NUMBERS:
                continue
            if (not isinstance(value, numbers.Real) or isinstance(value, bool)
                    or not math.isfinite(value) or not low <= value < high
                    or (value == low and not low_allowed)):
                raise OptionError(f"{_flag(name)} must be {_describe(low, low_allowed, high)}, "
                                  f"got {value!r}")
            setattr(self, name, float(value))

    def _check_experts(self) -> None:
        """--eg, --boa, --saew: one of them, and not with gradient descent's own options."""
        if self.saew_calibrate:
            self.saew = True
        if self.eg + self.boa + self.saew > 1:
            raise OptionError("choose one of --eg, --boa and --saew "
                              "(--saew_sub chooses SAEW's subroutine)")
        if self.experts:
            for name, on in (("l1", self.l1 > 0), ("l2", self.l2 > 0),
                             ("stage_poly", self.stage_poly)):
                if on:
                    raise OptionError(f"--{name} works with gradient descent, not with "
                                      f"--{self.expert_learner}")

    @property
    def experts(self) -> bool:
        """Exponential weights (EG, BOA, SAEW) instead of gradient descent."""
        return any(getattr(self, name) for name in EXPERT_LEARNERS)

    @property
    def expert_learner(self) -> str:
        return next(name for name in EXPERT_LEARNERS if getattr(self, name))

    @property
    def subroutine(self) -> str:
        """The experts' algorithm: EG or BOA (alone, or inside SAEW)."""
        return "eg" if self.eg else "boa" if self.boa else self.saew_sub

    @staticmethod
    def _parse_progress(text: str | None) -> tuple[bool, float]:
        """``-P N`` (integer) prints every N weighted examples; ``-P x.y`` multiplies."""
        if text is None:
            return False, 2.0
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise OptionError(f"-P/--progress expects a number, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise OptionError(f"-P/--progress must be finite and > 0, got {text!r}")
        if "." not in str(text) and "e" not in str(text).lower():
            return True, value
        return False, value + 1 if value <= 1 else value

    def model_options(self) -> dict:
        """The options a model file keeps."""
        return {name: getattr(self, name) for name in MODEL_OPTIONS}

    @property
    def loss(self) -> Loss:
        return LOSSES[self.loss_function]

    @property
    def loss_param(self) -> float:
        """The loss's parameter (0 for a loss without one)."""
        return getattr(self, self.loss.parameter) if self.loss.parameter else 0.0

    @property
    def update_rule(self) -> tuple[bool, bool, bool]:
        """(adaptive, normalized, invariant): all three unless some are named (VW's rule)."""
        if not (self.sgd or self.adaptive or self.normalized or self.invariant):
            return True, True, True
        return self.adaptive, self.normalized, self.invariant

    @property
    def holdout(self) -> bool:
        """VW holds out examples when there are several passes, or with --holdout_after."""
        return not self.holdout_off and (self.passes > 1 or self.holdout_after > 0)

    @property
    def regularized(self) -> bool:
        return self.l1 > 0 or self.l2 > 0

    @property
    def eta(self) -> float:
        if self.learning_rate is not None:
            return self.learning_rate
        adaptive, normalized, _ = self.update_rule
        return 0.5 if adaptive and normalized else 10.0

    @property
    def t0(self) -> float:
        if self.initial_t is not None:
            return self.initial_t
        adaptive, normalized, _ = self.update_rule
        return 0.0 if adaptive or normalized else 1.0

    @property
    def mask(self) -> int:
        return (1 << self.bit_precision) - 1
