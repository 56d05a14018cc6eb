"""The state of the exponential-weights learners (--eg, --boa, --saew) for a configuration:
the arrays of layout.py and, with --saew_calibrate, the grid of SAEW instances."""
from __future__ import annotations

import numpy as np

from olearn.config import Config
from olearn.errors import OptionError
from olearn.optim import boa
from olearn.optim import layout as L

# Address space the state may reserve (pages are touched only for the active features).
MAX_EXPERTS_BYTES = 16 << 30


def calibration_grid(config: Config) -> np.ndarray:
    """--saew_calibrate's instances, one row (d0, alpha, U, B scale) each: d0 in 1, 4, 16, ...;
    alpha, radius and the B scale × 4^k around the options' values (k centered on 0)."""
    def around(center: float, size: int) -> np.ndarray:
        return center * 4.0 ** (np.arange(size) - (size - 1) / 2)
    with np.errstate(over="ignore", under="ignore"):  # checked below
        axes = (4.0 ** np.arange(config.saew_grid_d0),
                around(config.saew_alpha, config.saew_grid_alpha),
                around(config.radius, config.saew_grid_radius), around(1.0, config.saew_grid_B))
    if not all((np.isfinite(axis) & (axis > 0)).all() for axis in axes):
        raise OptionError("--saew_calibrate: the grid around --saew_alpha and --radius leaves "
                          "the floating-point range")
    return np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)


# The instances' scalars that are options (layout.py): the run's, not the saved state's.
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
        grid = np.array([[config.saew_d0, config.saew_alpha, config.radius, 1.0]])
    es = np.zeros((len(grid), L.E_SIZE))
    es[:, L.E_D0], es[:, L.E_ALPHA], es[:, L.E_U], es[:, L.E_B_SCALE] = grid.T
    es[:, L.E_B] = config.saew_B
    return es


def new_experts(config: Config) -> tuple:
    """The ``ew`` state tuple of --eg/--boa/--saew (layout.py); tiny arrays when unused.

    Coordinate arrays are sized 2^b but only the active prefix is ever touched, so the memory
    actually used grows with the features seen.
    """
    cap = 1 << config.bit_precision if config.experts else 1
    count = instances(config)
    corner_columns = 2 * cap + 1 if config.experts and config.subroutine == "boa" else 1
    needed = 8 * (count * (boa.ROWS * corner_columns + L.K_ROWS * cap) + corner_columns)
    if needed > MAX_EXPERTS_BYTES:
        raise OptionError(f"--{config.expert_learner} with -b {config.bit_precision} and "
                          f"{count} instance(s) would reserve {needed / 2 ** 30:.0f} GiB "
                          f"(at most {MAX_EXPERTS_BYTES // 2 ** 30}); use a smaller -b"
                          + (" or calibration grid" if count > 1 else ""))
    es = new_es(config)
    shared = np.zeros(L.SH_SIZE)
    shared[L.SH_META_SUM] = count
    meta = np.zeros((boa.ROWS + 1, count))
    for k in range(count):
        boa.reset(meta, k)
    settings = np.zeros(L.S_SIZE)
    settings[L.S_SUB] = config.subroutine == "eg"
    settings[L.S_SESSIONS] = config.saew
    settings[L.S_C] = config.saew_C
    settings[L.S_A] = config.saew_a
    settings[L.S_B] = config.saew_b
    settings[L.S_CENTER_LAST] = config.saew_center == "last"
    settings[L.S_OUTPUT] = L.OUTPUTS[config.saew_output]
    settings[L.S_CALIBRATE] = config.saew_calibrate
    return (np.full(cap, -1, dtype=np.int32), np.zeros(cap, dtype=np.int64), np.zeros(cap),
            np.zeros(cap, dtype=np.int64), np.zeros((count, boa.ROWS, corner_columns)),
            np.zeros((count, L.K_ROWS, cap)), es, shared, meta, np.zeros(corner_columns),
            settings)
