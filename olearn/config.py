"""Every option of a run, validated once; shared by the CLI, the Python API and model files."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from olearn.errors import OlearnError
from olearn.features.interactions import terms_of
from olearn.losses import NAMES as LOSS_NAMES
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
        if not 1 <= self.bit_precision <= 30:
            raise OlearnError(f"-b/--bit_precision must be between 1 and 30, got {self.bit_precision}")
        if self.format not in FORMATS:
            raise OlearnError(f"--format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.hash not in HASHES:
            raise OlearnError(f"--hash must be one of {', '.join(HASHES)}, got {self.hash!r}")
        if self.loss_function not in LOSS_NAMES:
            raise OlearnError(f"unknown --loss_function {self.loss_function!r} "
                              f"(known: {', '.join(LOSS_NAMES)})")
        if not 0 < self.quantile_tau < 1:
            raise OlearnError(f"--quantile_tau must be in (0, 1), got {self.quantile_tau}")
        if self.link not in LINKS:
            raise OlearnError(f"--link must be one of {', '.join(LINKS)}, got {self.link!r}")
        for name in ("l1", "l2"):
            if not getattr(self, name) >= 0:
                raise OlearnError(f"--{name} must be >= 0, got {getattr(self, name)}")
        for name in ("passes", "holdout_period", "early_terminate"):
            if getattr(self, name) < 1:
                raise OlearnError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.dask_partitions < 0:
            raise OlearnError(f"--dask_partitions must be >= 0, got {self.dask_partitions}")
        if self.batch_sz < 0:
            raise OlearnError(f"--batch_sz must be >= 0, got {self.batch_sz}")
        if not self.sched_exponent >= 0:
            raise OlearnError(f"--sched_exponent must be >= 0, got {self.sched_exponent}")
        if self.poly_heuristic not in POLY_HEURISTICS:
            raise OlearnError(f"--poly_heuristic must be one of {', '.join(POLY_HEURISTICS)}, "
                              f"got {self.poly_heuristic!r}")
        if self.holdout_after < 0:
            raise OlearnError(f"--holdout_after must be >= 0, got {self.holdout_after}")
        if not self.decay_learning_rate > 0:
            raise OlearnError(f"--decay_learning_rate must be > 0, got {self.decay_learning_rate}")
        if self.power_t < 0:
            raise OlearnError(f"--power_t must be >= 0, got {self.power_t}")
        self._check_experts()
        self.progress_add, self.progress_arg = self._parse_progress(self.progress)
        self.quadratic, self.cubic, self.interactions = (
            list(self.quadratic), list(self.cubic), list(self.interactions))
        self.terms = terms_of(self.quadratic, self.cubic, self.interactions, self.permutations,
                              self.leave_duplicate_interactions,
                              lambda text: self.quiet or sys.stderr.write(text + "\n"))

    def _check_experts(self) -> None:
        """--eg, --boa, --saew: one of them, and not with gradient descent's own options."""
        if self.saew_calibrate:
            self.saew = True
        if self.eg + self.boa + self.saew > 1:
            raise OlearnError("choose one of --eg, --boa and --saew "
                              "(--saew_sub chooses SAEW's subroutine)")
        for name, choices in (("saew_sub", SAEW_SUBROUTINES), ("saew_center", SAEW_CENTERS),
                              ("saew_output", SAEW_OUTPUTS)):
            if getattr(self, name) not in choices:
                raise OlearnError(f"--{name} must be one of {', '.join(choices)}, "
                                  f"got {getattr(self, name)!r}")
        for name in ("radius", "saew_alpha", "saew_C"):
            if not getattr(self, name) > 0:
                raise OlearnError(f"--{name} must be > 0, got {getattr(self, name)}")
        for name in ("saew_B", "saew_a", "saew_b"):
            if not getattr(self, name) >= 0:
                raise OlearnError(f"--{name} must be >= 0, got {getattr(self, name)}")
        for name in ("saew_d0", "saew_grid_d0", "saew_grid_alpha", "saew_grid_radius",
                     "saew_grid_B"):
            if getattr(self, name) < 1:
                raise OlearnError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.experts:
            for name, on in (("l1", self.l1 > 0), ("l2", self.l2 > 0),
                             ("stage_poly", self.stage_poly)):
                if on:
                    raise OlearnError(f"--{name} works with gradient descent, not with "
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
        except ValueError:
            raise OlearnError(f"-P/--progress expects a number, got {text!r}") from None
        if "." not in text and "e" not in text.lower():
            if value <= 0:
                raise OlearnError(f"-P/--progress must be positive, got {text}")
            return True, value
        return False, value + 1 if value <= 1 else value

    def model_options(self) -> dict:
        """The options a model file keeps."""
        return {name: getattr(self, name) for name in MODEL_OPTIONS}

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
