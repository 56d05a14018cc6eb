"""The exponential-weights family (--eg, --boa, --saew, --saew_calibrate): its state for a
configuration (the arrays of state.py and, calibrated, the grid of SAEW instances), what a
model file keeps of it and the checks a loaded one must pass, its export and its description.
The kernels are saew.py's, over boa.py and eg.py."""
from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from olearn.core.checks import REL_TOL, counts, require
from olearn.core.memory import sparse_zeros
from olearn.data.hashing import CONSTANT_HASH
from olearn.errors import OlearnError, OptionError
from olearn.kernel.layouts import S_MAX, S_MIN
from olearn.learners.experts import boa, boa_corners, saew
from olearn.learners.experts import state as L
from olearn.learners.experts.saew import l1_radius
from olearn.learners.family import Kernels, LearnerFamily
from olearn.learners.gd import predict as weights_predict

if TYPE_CHECKING:  # annotations only: the registry imports every family
    from olearn.options.config import Config

# The model arrays of this family: dtype and shape (None: any length), and which of them have
# declared fields (olearn/core/fields.py) along which axis.
ARRAYS = {"ew_hashes": ("<i8", (None,)), "ew_corners": ("<f8", (None, None, None)),
          "ew_coord": ("<f8", (None, None, None)), "ew_es": ("<f8", (None, None)),
          "ew_shared": ("<f8", (None,)), "ew_meta": ("<f8", (boa.ROWS + 1, None)),
          "ew_groups": ("<f8", (None, boa_corners.SAVED_GROUP_ROWS, None)),
          "ew_records": ("<f8", (None, 2, None))}
NAMED = {"ew_es": (L.ES, 1), "ew_shared": (L.SHARED, 0), "ew_coord": (L.COORD, 1)}

# Address space the state may reserve (pages are touched only for the active features).
MAX_EXPERTS_BYTES = 16 << 30


def calibration_grid(config: Config) -> np.ndarray:
    """--saew_calibrate's instances, one row (d0, alpha, U, B scale, join) each: d0 in 1, 4,
    16, ...; alpha, radius and the B scale × 4^k around the options' values (k centered on 0);
    join, the first block j whose aggregation mixes the instance, is the largest |k| rounded
    down (the paper's grid G_j has k in -j..j)."""
    def steps(size: int) -> np.ndarray:
        return np.arange(size) - (size - 1) / 2
    k = [steps(config.saew_grid_alpha), steps(config.saew_grid_radius), steps(config.saew_grid_B)]
    with np.errstate(over="ignore", under="ignore"):  # checked below
        axes = (4.0 ** np.arange(config.saew_grid_d0), config.saew_alpha * 4.0 ** k[0],
                l1_radius(config) * 4.0 ** k[1], 4.0 ** k[2])
    if not all((np.isfinite(axis) & (axis > 0)).all() for axis in axes):
        raise OptionError("--saew_calibrate: the grid around --saew_alpha and --radius leaves "
                          "the floating-point range")
    values = [a.ravel() for a in np.meshgrid(*axes, indexing="ij")]
    distance = np.meshgrid(np.zeros(config.saew_grid_d0), *map(np.abs, k), indexing="ij")
    return np.stack([*values, np.floor(np.max(distance, axis=0).ravel())], axis=1)


# The instances' scalars that are options (layout.py): the run's, not the saved state's.
# (E_JOIN is the saved state's: models from before the grid grew mix every instance.)
E_OPTIONS = [L.E_D0, L.E_ALPHA, L.E_U, L.E_B, L.E_B_SCALE]


def instances(config: Config) -> int:
    """How many SAEW instances the learner runs: --saew_calibrate's grid, or one."""
    if not config.saew_calibrate:
        return 1
    return (config.saew_grid_d0 * config.saew_grid_alpha * config.saew_grid_radius
            * config.saew_grid_B)


def new_es(config: Config) -> np.ndarray:
    """Each instance's scalars before any example: its options (``E_OPTIONS``), the rest 0."""
    if config.saew_calibrate:
        grid = calibration_grid(config)
    else:
        grid = np.array([[config.saew_d0, config.saew_alpha, l1_radius(config), 1.0, 0.0]])
    es = np.zeros((len(grid), L.E_SIZE))
    es[:, L.E_D0], es[:, L.E_ALPHA], es[:, L.E_U], es[:, L.E_B_SCALE], es[:, L.E_JOIN] = grid.T
    es[:, L.E_B] = config.saew_B
    es[:, L.E_FROZEN] = 1.0
    return es


def new_experts(config: Config) -> tuple:
    """The ``ew`` state tuple of --eg/--boa/--saew (layout.py); tiny arrays when unused.

    Coordinate arrays are sized 2^b but only the active prefix is ever touched, so the memory
    actually used grows with the features seen.
    """
    cap = 1 << config.bit_precision if config.experts else 1
    count = instances(config)
    boa_sub = config.experts and config.subroutine == "boa"
    corner_columns = 2 * cap + 1 if boa_sub else 1
    corner_rows = boa_corners.ROWS if boa_sub else boa_corners.SAVED_ROWS
    needed = 8 * count * (corner_rows * corner_columns + L.K_ROWS * cap)
    if needed > MAX_EXPERTS_BYTES:
        raise OptionError(f"--{config.expert_learner} with -b {config.bit_precision} and "
                          f"{count} instance(s) would reserve {needed / 2 ** 30:.0f} GiB "
                          f"(at most {MAX_EXPERTS_BYTES // 2 ** 30}); use a smaller -b"
                          + (" or calibration grid" if count > 1 else ""))
    es = new_es(config)
    shared = np.zeros(L.SH_SIZE)
    shared[L.SH_META_SUM] = np.count_nonzero(es[:, L.E_JOIN] <= saew.block(1))
    meta = np.zeros((boa.ROWS + 1, count))
    for k in range(count):
        boa.reset(meta, k)
    settings = np.zeros(L.S_SIZE)
    settings[L.S_SUB] = L.SUBS[config.subroutine]
    settings[L.S_SESSIONS] = config.saew
    settings[L.S_C] = config.saew_C
    settings[L.S_A] = config.saew_a
    settings[L.S_B] = config.saew_b
    settings[L.S_CENTER_LAST] = config.saew_center == "last"
    settings[L.S_OUTPUT] = L.OUTPUTS[config.saew_output]
    settings[L.S_CALIBRATE] = config.saew_calibrate
    settings[L.S_REGROW] = config.saew_regrow
    settings[L.S_REGROW_FLOOR] = config.saew_regrow_floor
    settings[L.S_CONSTANT] = -1 if config.noconstant else CONSTANT_HASH & config.mask
    settings[L.S_SGD_ETA] = config.saew_sgd_eta
    settings[L.S_SGD_L1] = config.saew_sgd_l1
    groups = sparse_zeros((count, boa_corners.GROUP_ROWS, boa_corners.LEVELS if boa_sub else 1))
    records = np.zeros((count, 2, boa_corners.RECORDS if boa_sub else 1))
    return (np.full(cap, -1, dtype=np.int32), np.zeros(cap, dtype=np.int64), np.zeros(cap),
            np.zeros(cap, dtype=np.int64), sparse_zeros((count, corner_rows, corner_columns)),
            sparse_zeros((count, L.K_ROWS, cap)), es, shared, meta, settings, groups, records)


ExponentialWeightsState = namedtuple("ExponentialWeightsState", ["ew"])


class ExponentialWeights(LearnerFamily):
    """EG, BOA or SAEW (calibrated or not) on the corners of an l1 ball: the ``ew`` state
    tuple the kernels take (state.py)."""

    GROUP = "Exponential weights: EG, BOA, SAEW"
    OPTIONS = saew.OPTIONS
    BUNDLE = ExponentialWeightsState
    WARM_UP = {"saew": True}
    AUDIT_SYNC = True  # θ lives in the experts' state
    # why --dask refuses the family: the experts' state (exponential weights, SAEW's balls and
    # sessions) declares no merge rule
    UNMERGEABLE = ("--eg/--boa/--saew: their corner weights have no averaging rule (weighted "
                   "means of exponential weights are not the algorithm's state); train them in "
                   "one process")
    ARRAYS = ARRAYS
    OPTIONAL_ARRAYS = ("ew_groups", "ew_records")  # models from before BOA's frozen rates
    NAMED = NAMED

    def __init__(self, config: Config):
        super().__init__(config)
        self.ew = new_experts(config)

    @classmethod
    def chosen(cls, config: Config) -> bool:
        return config.experts

    @classmethod
    def flag(cls, config: Config) -> str:
        return f"--{config.expert_learner}"

    @classmethod
    def check_options(cls, config: Config) -> None:
        for name, on in (("l1", config.l1 > 0), ("l2", config.l2 > 0),
                         ("stage_poly", config.stage_poly),
                         ("initial_weight", config.initial_weight != 0),
                         ("random_weights", config.random_weights),
                         ("normal_weights", config.normal_weights),
                         ("truncated_normal_weights", config.truncated_normal_weights),
                         ("oaa", config.oaa is not None),
                         ("csoaa", config.csoaa is not None),
                         ("multilabel_oaa", config.multilabel_oaa is not None)):
            if on:
                raise OptionError(f"--{name} works with gradient descent, not with "
                                  f"--{config.expert_learner}")

    def bundle(self) -> tuple:
        return self.BUNDLE(self.ew)

    @staticmethod
    def describe(config: Config) -> str:
        if not config.saew:
            return f"{config.subroutine} (radius {l1_radius(config):g})"
        sub = config.subroutine
        if sub == "sgd":
            sub = f"sgd, eta {config.saew_sgd_eta:g}, l1 {config.saew_sgd_l1:g}"
        if config.saew_calibrate:
            return f"saew calibrated ({sub})"
        return (f"saew ({sub}, radius {l1_radius(config):g}, d0 {config.saew_d0}, "
                f"C {config.saew_C:g}, regrow {config.saew_regrow:g}, floor "
                f"{config.saew_regrow_floor:g}, center {config.saew_center})")

    def sync(self, weights: np.ndarray, state: np.ndarray) -> None:
        """Export θ (the iterate, the session average or its truncation) into the weights."""
        saew.export(self.ew, weights)

    def model_arrays(self) -> dict:
        """The state a model file keeps: that of the active coordinates (and BOA's ghost
        corner), with BOA's groups of the levels in use and its records of |rho|, so that a
        continued run is the run that did not stop."""
        _, hashes, _, _, corners, coord, es, shared, meta, _, groups, records = self.ew
        n = int(shared[L.SH_ACTIVE])
        k = len(es)
        saved_groups = np.zeros((k, boa_corners.SAVED_GROUP_ROWS, 0))
        saved_records = np.zeros((k, 2, 0))
        if corners.shape[2] > 1:
            rows = boa_corners.SAVED_ROWS
            corners = corners[:, :rows, :2 * n + 1]  # (the ghost is column 2n)
            if shared[L.SH_T] > 0:  # (before the first example, the groups are not formed)
                low, high = int(es[:, L.E_LO].min()), int(es[:, L.E_HI].max())
                saved_groups = groups[:, :boa_corners.SAVED_GROUP_ROWS, low:high + 1]
                saved_records = records[:, :, :int(es[:, L.E_RECORDS].max())]
        return dict(zip(ARRAYS, (hashes[:n], corners, coord[:, :, :n], es, shared, meta,
                                 saved_groups, saved_records)))

    def restore(self, arrays: dict, path: str) -> None:
        """Continue from a model's state (model.load checked it against the model's options;
        the run's options may still ask for another grid)."""
        slot, hashes, _, _, corners, coord, es, shared, meta, _, groups, records = self.ew
        n = len(arrays["ew_hashes"])
        boa_sub = corners.shape[2] > 1
        rows = arrays["ew_corners"].shape[1]
        expected = {"ew_corners": (corners.shape[0], rows, 2 * n + 1 if boa_sub else 1),
                    "ew_coord": (coord.shape[0], coord.shape[1], n), "ew_es": es.shape,
                    "ew_shared": shared.shape, "ew_meta": meta.shape}
        if any(arrays[name].shape != shape for name, shape in expected.items()):
            raise OlearnError("model's --eg/--boa/--saew state does not fit these options "
                              "(a different calibration grid or subroutine?)", path)
        hashes[:n] = arrays["ew_hashes"]
        slot[hashes[:n]] = np.arange(n, dtype=slot.dtype)
        if boa_sub:
            corners[:, :rows, :2 * n + 1] = arrays["ew_corners"]
        else:
            corners[:] = arrays["ew_corners"]
        coord[:, :, :n] = arrays["ew_coord"]
        options = es[:, E_OPTIONS]  # the run's: an option given on the command line applies
        es[:] = arrays["ew_es"]
        es[:, E_OPTIONS] = options
        shared[:] = arrays["ew_shared"]
        meta[:] = arrays["ew_meta"]
        if not boa_sub or shared[L.SH_T] == 0:
            return
        if rows == boa_corners.SAVED_ROWS:
            saved = arrays["ew_groups"]
            low = int(es[:, L.E_LO].min())
            groups[:, :boa_corners.SAVED_GROUP_ROWS, low:low + saved.shape[2]] = saved
            records[:, :, :arrays["ew_records"].shape[2]] = arrays["ew_records"]
        # the kernels complete the state (boa_corners.restored) before their first use of it:
        # the command line's compiled module only holds the entry points its warm-up called
        es[:, L.E_LOADED] = 1.0

    @staticmethod
    def check(arrays: dict, config: Config) -> None:
        """--eg/--boa/--saew: shapes for the model's options, the active index, and what the
        kernels use as counts, indices and divisors; BOA's weights those of its experts' state."""
        hashes, corners, coord = arrays["ew_hashes"], arrays["ew_corners"], arrays["ew_coord"]
        es, shared, meta = arrays["ew_es"], arrays["ew_shared"], arrays["ew_meta"]
        n, k = len(hashes), instances(config)  # k before new_es: its grid can be large
        boa_sub = config.subroutine == "boa"
        require(corners.shape[::2] == (k, 2 * n + 1 if boa_sub else 1)
                and coord.shape[::2] == (k, n) and len(es) == k and meta.shape[1] == k,
                "--eg/--boa/--saew state does not fit the model's options")
        require(bool(np.all(hashes >= 0)) and len(np.unique(hashes)) == n
                and (n == 0 or int(hashes.max()) < 1 << config.bit_precision),
                "ew_hashes out of range or repeated")
        require(all(np.isfinite(a).all() for a in (corners, coord, es, shared, meta)),
                "NaN or infinite --eg/--boa/--saew state")
        # coordinates arrive with the examples learned; examples without features leave the
        # subroutine untouched (saew._instance_learn), so BOA's lone ghost stays fresh
        learned = shared[L.SH_T] > 0
        require(shared[L.SH_ACTIVE] == n and (n == 0 or learned)
                and counts(shared[[L.SH_TOUCHED, L.SH_T]]) and shared[L.SH_TOUCHED] <= n,
                "malformed ew_shared")
        options = E_OPTIONS
        require(np.array_equal(es[:, options], new_es(config)[:, options])
                and bool(np.all(es[:, [L.E_D0, L.E_ALPHA, L.E_U]] > 0)),
                "ew_es does not hold the model's options")
        # every scalar but BOA's log-weight offsets and Σ rho is a count, a sum of squares, a
        # rate, a weight sum (BOA's and EG's divisor once there are coordinates) or a
        # non-negative offset
        signed = [L.E_TOP, L.E_S1] if boa_sub else [L.E_TOP]
        require(counts(es[:, [L.E_SESSION, L.E_N]]) and bool(np.all(np.delete(es, signed, 1) >= 0))
                and (n == 0 or config.subroutine == "sgd" or bool(np.all(es[:, L.E_SUM] > 0))),
                "malformed ew_es")
        # the calibration's BOA over the instances of the current block (its weight sum divides)
        mixed = es[:, L.E_JOIN] <= saew.block(max(int(shared[L.SH_T]), 1))
        require(mixed.any() and _boa_weights_fit(meta[:boa.ROWS, mixed], None,
                                                 math.log(max(mixed.sum(), 2)))
                and math.isclose(shared[L.SH_META_SUM], meta[boa.W, mixed].sum(),
                                 rel_tol=REL_TOL), "malformed ew_meta")
        frozen = bool(np.all(es[:, L.E_FROZEN] == 1))
        if boa_sub and learned and frozen:
            groups, records = arrays.get("ew_groups"), arrays.get("ew_records")
            require(corners.shape[1] == boa_corners.SAVED_ROWS and groups is not None
                    and records is not None and len(groups) == k and len(records) == k,
                    "BOA's frozen-rate state is incomplete")
            require(all(_frozen_state_fits(corners[i], es[i], n) for i in range(k)),
                    "BOA's corners are not a frozen-rate state")
            _check_groups(corners, groups, records, es, n)
        elif boa_sub and n == 0 and learned:
            require(all(_fresh(rows[:boa.ROWS]).all() for rows in corners),
                    "BOA's ghost corner is not fresh")
        elif boa_sub and learned:  # (before the first example, the corners are reset when used)
            # a model from before frozen rates (or one loaded from it and saved unchanged)
            require(bool(np.all(es[:, L.E_FROZEN] == 0))
                    and all(_boa_weights_fit(corners[i, :boa.ROWS], es[i, L.E_TOP],
                                             math.log(2 * n))
                            and math.isclose(es[i, L.E_SUM], corners[i, boa.W, :-1].sum(),
                                             rel_tol=REL_TOL) for i in range(k)),
                    "BOA's corner weights are not those of their state")
        if config.subroutine == "sgd":  # in the box, snapshots of the session's counters
            snap, shrunk = coord[:, L.K_SNAP], coord[:, L.K_SHRUNK]
            require(bool(np.all(np.abs(coord[:, L.K_G]) <= es[:, L.E_EPS, None]))
                    and bool(np.all(coord[:, L.K_SQ] >= 0))
                    and bool(np.all((snap >= 0) & (snap <= es[:, L.E_N, None])))
                    and bool(np.all((shrunk >= 0) & (shrunk <= es[:, L.E_SHRINK, None]))),
                    "SGD's deviations or snapshots out of range")
        elif not boa_sub:  # EG keeps every exp(±eta G - offset) <= 1
            log_weights = np.abs(es[:, L.E_ETA, None] * coord[:, L.K_G])
            require(bool(np.all(log_weights <= es[:, L.E_OFF, None])),
                     "EG's offset below its log-weights")


def _fresh(experts_rows: np.ndarray) -> np.ndarray:
    """Which BOA experts (rows V, B2, R, W; a column each) are as boa.reset leaves them."""
    v, b2, r, w = experts_rows
    return (v == 0) & (b2 == boa.B2_START) & (r == 0) & (w == 1)


def _frozen_state_fits(corner_rows: np.ndarray, es: np.ndarray, n: int) -> bool:
    """Whether one instance's corners (boa_corners' saved rows; a column each) have V >= 0, B2
    at least its start, a level in range (its group), snapshots of the sums and steps since the
    last rebase, weights (or units) >= 0, and its scalars counts where they are."""
    v, b2, _, level, _, s2, _, step, w = corner_rows
    whole = counts(es[[L.E_STEP, L.E_RECORDS, L.E_LO, L.E_HI, L.E_GROUPED]])
    return bool(whole and es[L.E_RECORDS] <= boa_corners.RECORDS and es[L.E_GROUPED] <= 1
                and es[L.E_HI] < boa_corners.LEVELS and es[L.E_S2] >= 0
                and np.all(v >= 0) and np.all(b2 >= boa.B2_START)
                and np.all((level == np.round(level)) & (level >= boa_corners.LEVEL_LOW)
                           & (level <= boa_corners.LEVEL_HIGH))
                and np.all((s2 >= 0) & (s2 <= es[L.E_S2]))
                and np.all((step == np.round(step)) & (step >= 0) & (step <= es[L.E_STEP]))
                and np.all(w >= 0))


def _check_groups(corners: np.ndarray, groups: np.ndarray, records: np.ndarray,
                  es: np.ndarray, n: int) -> None:
    """BOA's saved groups (the levels from the lowest E_LO on) count their corners and hold
    non-negative sums, where the groups are formed; the records of |rho| are decreasing powers
    of 2 at increasing steps since the rebase."""
    low = int(es[:, L.E_LO].min())
    require(groups.shape[2] == max(int(es[:, L.E_HI].max()) - low + 1, 0)
            and records.shape[2] == int(es[:, L.E_RECORDS].max()), "malformed BOA groups")
    for i in range(len(es)):
        kept = int(es[i, L.E_RECORDS])
        value, step = records[i, 0, :kept], records[i, 1, :kept]
        require(bool(np.all(value > 0) and np.all(np.frexp(value)[0] == 0.5)
                     and np.all(np.diff(value) < 0) and np.all(np.diff(step) > 0)
                     and np.all((step >= 1) & (step <= es[i, L.E_STEP]))),
                "malformed BOA records of |rho|")
        if es[i, L.E_GROUPED] == 0:
            continue
        held = corners[i, boa_corners.LEVEL, :2 * n].astype(np.int64) - boa_corners.LEVEL_LOW
        require(bool(np.all((held >= es[i, L.E_LO]) & (held <= es[i, L.E_HI]))),
                "BOA's corners outside their groups' range")
        count = np.bincount(held - low, minlength=groups.shape[2])
        group = groups[i]
        require(np.array_equal(count, group[boa_corners.COUNT])
                and bool(np.all(group[boa_corners.SUM][count > 0] >= 0)),
                "BOA's groups do not count their corners")


def _boa_weights_fit(experts_rows: np.ndarray, offset: float | None, log_n: float) -> bool:
    """Whether BOA experts (rows V, B2, R, W; a column each) are fresh (boa.reset) or weigh
    what their state says, eta e^(eta R - offset) (boa.weigh; ``offset`` None: the largest
    eta R, as the calibration's step). B2 > 0: the rates divide by it."""
    v, b2, r, w = experts_rows
    fresh = _fresh(experts_rows)
    if fresh.all():
        return True
    if not (np.all(v >= 0) and np.all(b2 > 0)):
        return False
    with np.errstate(all="ignore"):  # an overflow is a mismatch
        eta = np.where(v > 0, np.minimum(1 / b2, np.sqrt(log_n / np.where(v > 0, v, 1))), 1 / b2)
        a = eta * r
        weights = eta * np.exp(a - (a.max() if offset is None else offset))
    return bool(np.all(fresh | np.isclose(w, weights, rtol=REL_TOL, atol=1e-300)))


@njit(cache=True, nogil=True, _nrt=False)
def _fits(family, model):
    return saew.fits(family.ew, model.W.shape[0])


@njit(cache=True, nogil=True, inline="always")
def _predict(family, model, features, initial, imp, s, prefetch):
    """From the experts' own state, except test-only: then the weight table holds the model
    they exported."""
    index, value, lo, hi, _ = features
    if s.test_only:
        return np.float64(weights_predict(model.W, index, value, lo, hi, initial, prefetch))
    state = model.state
    return initial + saew.predict(family.ew, index, value, lo, hi, state[S_MIN], state[S_MAX],
                                  False)


@njit(cache=True, nogil=True, inline="always")
def _learn_predict(family, model, features, initial, imp, s, prefetch):
    index, value, lo, hi, _ = features
    state = model.state
    return initial + saew.predict(family.ew, index, value, lo, hi, state[S_MIN], state[S_MAX],
                                  True)


@njit(cache=True, nogil=True, inline="always")
def _update(family, model, features, scored, s, work, prefetch):
    saew.learn(family.ew, s.loss, s.loss_param, scored.p, scored.y, scored.imp, scored.initial)


ExponentialWeights.KERNELS = Kernels(_fits, _predict, _learn_predict, _update)
