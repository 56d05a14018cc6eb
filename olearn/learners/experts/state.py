"""Where the exponential-weights learners (EG, BOA, SAEW and its calibration) keep their state.

Coordinates are a compact index of the features seen so far ("active", in order of arrival),
so these learners cost O(d_active), not O(2^b). One learner is K SAEW *instances* (K = 1, or
the calibration grid) sharing that index. Arrays of the ``ew`` tuple:

    slot     int32 (2^b,)            feature index -> active coordinate, -1 if never seen
    hashes   int64 (cap,)            active coordinate -> feature index
    x_buf    float64 (cap,)          the current example's values, summed per coordinate
    touched  int64 (cap,)            the current example's distinct coordinates
    corners  float64 (K, ROWS, 2 cap + 1)  BOA's experts (boa_corners.py): corner 2s is +, 2s + 1
                                     is -; column 2n (n active) is the "ghost", a corner no
                                     gradient has touched (new coordinates start from its state;
                                     next to the active ones, so the pages touched grow with n)
    coord    float64 (K, K_ROWS, cap)  per coordinate: center, session sum of θ̂ - center, EG's or
                                     SGD's state
    es       float64 (K, E_SIZE)     per-instance scalars
    shared   float64 (SH_SIZE,)      scalars of the whole learner
    meta     float64 (ROWS + 1, K)   the calibration's BOA over the instances (last row: forecasts)
    settings float64 (S_SIZE,)       the options (below)
    groups   float64 (K, GROUP_ROWS, LEVELS)  BOA: the corners grouped by their frozen rate
    records  float64 (K, 2, RECORDS)  BOA: the running maxima of |rho| and their steps
"""
from olearn.core.fields import Field, Layout

# None of this state merges: --dask refuses these learners (a weighted mean of exponential
# weights is not the algorithm's state).
COORD = Layout(
    "ew_coord",  # rows of ``coord``, per coordinate
    Field("center"),
    Field("avg", "Σ over the session of (θ̂ - center)"),
    Field("g", "EG: -eps Σ g; SGD: θ̂ - center as of the last touch (before the shrinkage since)"),
    Field("snap", "EG: the average's A at the last touch; SGD: the session's step count then"),
    Field("shrunk", "SGD: the session's Σ λ at the last touch"),
    Field("sq", "SGD: Σ ||g||∞² over the session's examples that touched the coordinate (its "
                "step is eta eps / the square root)"),
    Field("scratch", saved=False))
K_CENTER, K_AVG, K_G, K_SNAP, K_SHRUNK, K_SQ, K_SCRATCH = range(len(COORD))
K_ROWS = len(COORD)
COORD.check_constants(globals(), "K_")

ES = Layout(
    "ew_es",  # per-instance scalars
    Field("sum", "BOA: Z / e^top; EG: Z / e^offset"),
    Field("top", "BOA: the offset of the corners' log-weights (the largest group's)"),
    Field("eps", "radius of the current session"),
    Field("session"),
    Field("n", "examples in the session"),
    Field("q", "Σ ||g||∞² in the session"),
    Field("d0"), Field("alpha"), Field("u"),
    Field("b", "B given (0: the running max of ||g||∞ times b_scale)"),
    Field("b_scale"),
    Field("eta", "EG: learning rate (0: not calibrated yet); SGD: eta × eps of the session"),
    Field("var", "EG: Σ variance of the corners' losses"),
    Field("range", "EG: range of the corners' losses (a power of 2)"),
    Field("off", "EG: offset of Z"),
    Field("ref", "EG: units of the lazy average"),
    Field("a", "EG: Σ 1/Z"),
    Field("touches", "EG: coordinates updated since Z was re-summed; BOA: since the last full "
                     "step"),
    Field("b_max", "running max of ||g||∞"),
    Field("grown", "the most coordinates a center kept (the constant aside): d0 grows to it"),
    Field("join", "calibration: the first block j, [2^j, 2^(j+1)), whose BOA mixes the instance"),
    Field("shrink", "SGD: Σ λ over the session's steps (a coordinate owes its step × the rest)"),
    Field("s1", "BOA: Σ rho (the untouched corners' regret) since the last rebase"),
    Field("s2", "BOA: Σ rho² since the last rebase"),
    Field("step", "BOA: lazy steps since the last rebase"),
    Field("records", "BOA: running maxima of |rho| kept (boa_corners.py)"),
    Field("lo", "BOA: the lowest group with corners"),
    Field("hi", "BOA: the highest group with corners"),
    Field("s2_session", "BOA: Σ rho² over the session"),
    Field("s2_full", "BOA: s2_session at the last full step"),
    Field("frozen", "BOA: the saved corners' 4th row is their frozen rate's level (0: a "
                    "model from before frozen rates, whose row is the weight)"),
    Field("grouped", "BOA: the groups hold the corners (0: a dense step left them stale)"),
    Field("loaded", "BOA: read from a model file, its rates and sums not completed yet",
          saved=False))
(E_SUM, E_TOP, E_EPS, E_SESSION, E_N, E_Q, E_D0, E_ALPHA, E_U, E_B, E_B_SCALE, E_ETA, E_VAR,
 E_RANGE, E_OFF, E_REF, E_A, E_TOUCHES, E_B_MAX, E_GROWN, E_JOIN, E_SHRINK, E_S1, E_S2, E_STEP,
 E_RECORDS, E_LO, E_HI, E_S2_SESSION, E_S2_FULL, E_FROZEN, E_GROUPED, E_LOADED) = range(len(ES))
E_SIZE = len(ES)
ES.check_constants(globals(), "E_")

SHARED = Layout(
    "ew_shared",  # scalars of the whole learner
    Field("active", "active coordinates"),
    Field("t", "examples learned (the calibration's blocks are [2^j, 2^(j+1)))"),
    Field("meta_sum", "the calibration's weight sum"),
    Field("touched", "distinct coordinates of the example being learned"))
SH_ACTIVE, SH_T, SH_META_SUM, SH_TOUCHED = range(len(SHARED))
SH_SIZE = len(SHARED)
SHARED.check_constants(globals(), "SH_")

SETTINGS = Layout(
    "ew_settings",  # the run's options (the last array of the ``ew`` tuple), never saved
    Field("sub", "the subroutine: SUBS", saved=False),
    Field("sessions", "SAEW's sessions (0: a single session, plain BOA or EG)", saved=False),
    Field("c", "the stopping rule's constant", saved=False),
    Field("a", "the subroutine's constants a and b in (6) (0: sqrt(ln 2d) and ln 2d)",
          saved=False),
    Field("b", saved=False),
    Field("center_last", "recenter on the truncated last iterate, not the session average",
          saved=False),
    Field("output", "what the model holds: 0 the iterate, 1 the session average, 2 its "
                    "truncation", saved=False),
    Field("calibrate", "Algorithm 3: BOA over the instances, restarted on doubling blocks",
          saved=False),
    Field("regrow", "a center drops at most this fraction of the next radius in l1 mass "
                    "(0: no limit)", saved=False),
    Field("regrow_floor", "a center keeps every coordinate above this multiple of the "
                          "median magnitude (0: none beyond its d0 largest)", saved=False),
    Field("constant", "the constant feature's weight index, never truncated (-1: none)",
          saved=False),
    Field("sgd_eta", "SGD: the step size's factor (of eps / sqrt(Σ g²), per coordinate)",
          saved=False),
    Field("sgd_l1", "SGD: the L1 level's factor (of the session's RMS ||g||∞)", saved=False))
(S_SUB, S_SESSIONS, S_C, S_A, S_B, S_CENTER_LAST, S_OUTPUT, S_CALIBRATE, S_REGROW,
 S_REGROW_FLOOR, S_CONSTANT, S_SGD_ETA, S_SGD_L1) = range(len(SETTINGS))
S_SIZE = len(SETTINGS)
SETTINGS.check_constants(globals(), "S_")

OUTPUTS = {"iterate": 0, "average": 1, "sparse": 2}
BOA, EG, SGD = range(3)  # the subroutines' codes (settings[S_SUB])
SUBS = {"boa": BOA, "eg": EG, "sgd": SGD}
