"""Where the exponential-weights learners (EG, BOA, SAEW and its calibration) keep their state.

Coordinates are a compact index of the features seen so far ("active", in order of arrival),
so these learners cost O(d_active), not O(2^b). One learner is K SAEW *instances* (K = 1, or
the calibration grid) sharing that index. Arrays of the ``ew`` tuple:

    slot     int32 (2^b,)            feature index -> active coordinate, -1 if never seen
    hashes   int64 (cap,)            active coordinate -> feature index
    x_buf    float64 (cap,)          the current example's values, summed per coordinate
    touched  int64 (cap,)            the current example's distinct coordinates
    corners  float64 (K, ROWS, 2 cap + 1)  BOA's experts: corner 2s is +, 2s + 1 is -; the
                                     last column is the "ghost", a corner no gradient has touched
                                     (new coordinates start from its state)
    coord    float64 (K, K_ROWS, cap)  per coordinate: center, session sum of θ̂ - center, EG's state
    es       float64 (K, E_SIZE)     per-instance scalars
    shared   float64 (SH_SIZE,)      scalars of the whole learner
    meta     float64 (ROWS + 1, K)   the calibration's BOA over the instances (last row: forecasts)
    regrets  float64 (2 cap + 1,)    BOA's scratch: the current example's regret of each corner
    settings float64 (S_SIZE,)       the options (below)
"""
# coord rows
K_CENTER = 0
K_AVG = 1      # Σ over the session of (θ̂ - center)
K_G = 2        # EG: -eps Σ g
K_SNAP = 3     # EG: the average's A at the last touch
K_SCRATCH = 4
K_ROWS = 5

# es fields
E_SUM = 0       # BOA: Σ w over the corners; EG: Z / e^offset
E_TOP = 1       # BOA: the offset of the corners' log-weights
E_EPS = 2       # radius of the current session
E_SESSION = 3
E_N = 4         # examples in the session
E_Q = 5         # Σ ||g||∞² in the session
E_D0 = 6
E_ALPHA = 7
E_U = 8
E_B = 9         # B given (0: the running max of ||g||∞ times E_B_SCALE)
E_B_SCALE = 10
E_ETA = 11      # EG: learning rate (0: not calibrated yet)
E_VAR = 12      # EG: Σ variance of the corners' losses
E_RANGE = 13    # EG: range of the corners' losses (a power of 2)
E_OFF = 14      # EG: offset of Z
E_REF = 15      # EG: units of the lazy average
E_A = 16        # EG: Σ 1/Z
E_TOUCHES = 17  # EG: coordinates updated since Z was re-summed
E_B_MAX = 18    # running max of ||g||∞
E_SIZE = 19

# shared fields
SH_ACTIVE = 0   # active coordinates
SH_T = 1        # examples learned (the calibration's blocks are [2^j, 2^(j+1)))
SH_META_SUM = 2  # the calibration's weight sum
SH_TOUCHED = 3   # distinct coordinates of the example being learned
SH_SIZE = 4

# settings (float64 array, the last of the ``ew`` tuple): the run's options
S_SUB = 0          # 0 BOA, 1 EG
S_SESSIONS = 1     # SAEW's sessions (0: a single session, plain BOA or EG)
S_C = 2            # the stopping rule's constant
S_A = 3            # the subroutine's constants a and b in (6) (0: sqrt(ln 2d) and ln 2d)
S_B = 4
S_CENTER_LAST = 5  # recenter on the truncated last iterate, not the session average
S_OUTPUT = 6       # what the model holds: 0 the iterate, 1 the session average, 2 its truncation
S_CALIBRATE = 7    # Algorithm 3: BOA over the instances, restarted on doubling blocks
S_SIZE = 8

OUTPUTS = {"iterate": 0, "average": 1, "sparse": 2}
