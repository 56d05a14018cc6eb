"""--readable_model and --invert_hash: the model as text, in VW's layout
(docs/vw-reference.md §6.1)."""
from __future__ import annotations

import numpy as np

from olearn.core.atomic import write_whole
from olearn.kernel import layouts
from olearn.options.config import Config
from olearn.persistence.vw_binary import VW_LAYOUT, chained_hash
from olearn.persistence.vw_state import kept_options, resume_lines


def header_lines(config: Config, state: np.ndarray, options: str) -> list[str]:
    """VW's header of a text model: the VW version whose layout it follows, the label range,
    the bits, the --ngram and --skips definitions, the kept ``options`` and VW's checksum (a
    chained hash of the text written after the version, as VW's)."""
    chunks = ["Id \n", f"Min label:{state[layouts.S_MIN]:g}\n",
              f"Max label:{state[layouts.S_MAX]:g}\n", f"bits:{config.bit_precision}\n",
              "lda:0\n"]
    for name, grams in (("ngram", config.ngram), ("skip", config.skips)):
        chunks += [f"{len(grams)} {name}:", *(f"{gram} " for gram in grams), "\n"]
    chunks.append(f"options:{' ' + options if options else ''}\n")
    checksum = chained_hash([chunk.encode("latin-1") for chunk in chunks])
    return [f"Version {VW_LAYOUT}", *"".join(chunks).splitlines(), f"Checksum: {checksum}"]


def write(path: str, learner, passes: int, names: dict[int, str] | None = None,
          table: bool = True, own_names: dict[int, str] | None = None) -> None:
    """Write ``learner``'s model (an OnlineLearner after ``passes`` passes) as text: a header,
    the reduction's own lines (``readable_lines``), the resume block (with a reduction, its
    first class's or copy's normalizer sums, as VW's), then a line ``index:values`` per
    coordinate the learner family lists (learners/family.py ``readable_rows``: for gradient
    descent ``index:w G N`` as VW's resume form, ``index:w`` with --predict_only_model), each
    prefixed by the feature's name with --invert_hash. ``table``: whether the stats kept the
    progress table's counters (--dask prints its table from the passes' sums); ``own_names``:
    with --invert_hash, the names of the reduction's own entries (--marginal's ids)."""
    config, weights, state = learner.config, learner.weights, learner.state
    predict_only = config.predict_only_model
    lines = header_lines(config, state, kept_options(config))
    lines += learner.reduction.readable_lines(own_names)
    lines += [":0"] if predict_only else [":1", *resume_lines(learner, passes, table)]
    listed, values = learner.family.readable_rows(weights, predict_only)
    for j, row in zip(listed.tolist(), values.tolist()):
        entry = f"{j}:{' '.join(f'{v:g}' for v in row)}"
        if names is not None:
            entry = f"{names.get(j, '')}:{entry}"  # VW: an unseen feature, no name
        lines.append(entry)
    write_whole(path, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
