"""--readable_model and --invert_hash: the model as text, in VW's layout
(docs/vw-reference.md §6.1)."""
from __future__ import annotations

import zlib

import numpy as np

import olearn
from olearn.core.atomic import AtomicOutput
from olearn.kernel import layouts
from olearn.learners.weights import W_W
from olearn.options.config import MODEL_OPTIONS, Config

_DEFAULTS = Config()


def _kept_options(config: Config) -> str:
    """Model options that differ from the defaults, as command-line flags, alphabetically."""
    flags = []
    for name in sorted(MODEL_OPTIONS):
        value = getattr(config, name)
        if value == getattr(_DEFAULTS, name) or name == "bit_precision":
            continue
        if value is True:
            flags.append(f"--{name}")
        else:  # a repeatable option once per value, as VW writes it (--quadratic ab --quadratic cd)
            flags += [f"--{name} {v}" for v in (value if isinstance(value, (list, tuple))
                                                else [value])]
    return " ".join(flags)


def write(path: str, config: Config, weights: np.ndarray, state: np.ndarray, family,
          names: dict[int, str] | None = None, predict_only: bool = False) -> None:
    """Write the text model: a header, then a line ``index:values`` per coordinate the learner
    ``family`` lists (learners/family.py ``readable_rows``: ``index:w G N`` per nonzero weight
    for gradient descent, ``index:w`` with --predict_only_model), each prefixed by the
    feature's name with --invert_hash."""
    nonzero = np.flatnonzero(weights[:, W_W])
    checksum = zlib.crc32(np.ascontiguousarray(weights[nonzero, W_W]).tobytes())
    lines = [f"Version olearn {olearn.__version__}", "Id",
             f"Min label:{state[layouts.S_MIN]:g}", f"Max label:{state[layouts.S_MAX]:g}",
             f"bits:{config.bit_precision}", "lda:0", "0 ngram:", "0 skip:",
             f"options: {_kept_options(config)}", f"Checksum: {checksum}"]
    if predict_only:
        lines.append(":0")
    else:
        lines += [":1", f"initial_t {config.t0:g}", f"norm normalizer {state[layouts.S_NORM]:g}",
                  f"t {state[layouts.S_T]:g}", f"min_label {state[layouts.S_MIN]:g}",
                  f"max_label {state[layouts.S_MAX]:g}", f"total_weight {state[layouts.S_TOTAL]:g}"]
    listed, values = family.readable_rows(weights, predict_only)
    for j, row in zip(listed.tolist(), values.tolist()):
        entry = f"{j}:{' '.join(f'{v:g}' for v in row)}"
        if names is not None:
            entry = f"{names.get(j, '')}:{entry}"  # VW: an unseen feature, no name
        lines.append(entry)
    out = AtomicOutput(path)
    try:
        out.write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        out.commit()
    except BaseException:
        out.discard()
        raise
