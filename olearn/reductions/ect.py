"""``--ect K``: VW's error-correcting tournament (Beygelzimer, Langford, Ravikumar 2009).

K classes play E = ``--error`` + 1 single-elimination tournaments: a class that loses a match of
tournament i drops to tournament i + 1, and a class that loses in the last one is eliminated.
Each match is a binary problem (+1: the right player wins). The E tournaments' winners then
play a final binary tournament of depth ⌈log2 E⌉. So the classes need (K - 1)·E + E - 1 binary
problems, which live on one weight table at --oaa's slots (``h · W + i``, W the smallest power
of two >= the problem count, reductions/oaa.py), each with its own normalizer sums.

To predict, the final tournament is walked from its root (only matches whose winner index is
at most E - 1 are played), then the chosen tournament's bracket down from its final to a
class. To learn a label, its class plays its own path up the brackets (each match learns the
class's side, and the class wins it when the updated problem then predicts that side), and the
final matches between the tournaments it won and lost are learned with weight 2^(depth left),
as VW's ect does.

The circuit depends on K and E only: :func:`circuit` builds it from the options, so a model file
keeps the problems' sums and nothing else. The kernels are reductions/ect_kernels.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from olearn.core.option import number
from olearn.reductions import oaa
from olearn.reductions.oaa import OneAgainstAll, OneScore

OPTIONS = (
    number("--ect", kind=int, default=None, low=2, high=oaa.MAX_CLASSES, model=True,
           metavar="K", help="Error-correcting tournament with K classes."),
    number("--error", kind=int, default=0, low=0, high=1023, model=True, metavar="E",
           help="--ect: the errors the tournament tolerates (E + 1 tournaments)."),
)

# A circuit node's columns (a row per node: the K classes, then the matches in creation order):
# its tournament, the match its winner and its loser go to (0: none, the class is out), the
# players of a match (node ids), and whether the match is its tournament's final.
NODE_COLUMNS = ("tournament", "winner", "loser", "left", "right", "last")
N_TOURNAMENT, N_WINNER, N_LOSER, N_LEFT, N_RIGHT, N_LAST = range(len(NODE_COLUMNS))
# The bundle's ``sizes``: K, E - 1, the first final problem, the final tournament's depth.
Z_CLASSES, Z_ERRORS, Z_LAST_PAIR, Z_HEIGHT = range(4)

EctState = namedtuple("EctState", ["classes", "nodes", "finals", "sizes", "won"])


def problem_count(k: int, errors: int) -> int:
    """The binary problems of K classes tolerating ``errors``: (K - 1)·E + E - 1."""
    return (k - 1) * (errors + 1) + errors


def circuit(k: int, errors: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes (a row each, ``NODE_COLUMNS``) and each tournament's final node of K classes'
    E = ``errors`` + 1 tournaments, built level by level: at each level every tournament pairs
    its players in order (an odd one out waits), a match's winner stays in the tournament and
    its loser moves to the next one (or is out after the last); a tournament whose last two
    players meet while the one before it is empty has its final, whose winner moves on."""
    eliminations = errors + 1
    nodes = [[0, 0, 0, 0, 0, 0] for _ in range(k)]
    finals: list[int] = []
    level: list[list[int]] = [list(range(k))] + [[] for _ in range(eliminations - 1)]
    while any(level):
        following: list[list[int]] = [[] for _ in level]
        for i, players in enumerate(level):
            for j in range(len(players) // 2):
                left, right = players[2 * j], players[2 * j + 1]
                match = len(nodes)
                nodes.append([i, 0, 0, left, right, 0])
                for player in (left, right):
                    nodes[player][N_WINNER if nodes[player][N_TOURNAMENT] == i else N_LOSER] = match
                if nodes[left][N_LAST]:  # a final's winner, arrived from the tournament before
                    nodes[left][N_WINNER] = match
                if len(players) == 2 and (i == 0 or not level[i - 1]):
                    nodes[match][N_LAST] = 1
                    if i + 1 < len(level):
                        following[i + 1].append(match)
                    else:
                        nodes[match][N_WINNER] = 0
                    finals.append(match)
                else:
                    following[i].append(match)
                if i + 1 < len(level):
                    following[i + 1].append(match)
                else:
                    nodes[match][N_LOSER] = 0
            if len(players) % 2:
                following[i].append(players[-1])
        level = following
    return np.array(nodes, dtype=np.int64), np.array(finals, dtype=np.int64)


def check(config) -> None:
    """The options --ect needs or refuses."""
    from olearn.errors import OptionError
    if config.ect is None:
        if "error" in config.explicit:
            raise OptionError("--error needs --ect")
        return
    # (another reduction: Config's check of one reduction refuses it)
    refused = (("stage_poly", config.stage_poly),
               ("named_labels", config.named_labels is not None),
               ("link", config.link != "identity"), ("binary", config.binary))
    for name, given in refused:
        if given:
            raise OptionError(f"--ect does not take --{name}")
    width = oaa.feature_width(problem_count(config.ect, config.error))
    if width > 1 << config.bit_precision:
        raise OptionError(f"--ect {config.ect} --error {config.error} needs at least "
                          f"{width.bit_length() - 1} bits (-b)")


class ErrorCorrectingTournament(OneScore):
    """--ect's configuration and state: --oaa's per-problem sums and feature width over the
    tournament's binary problems, the circuit, and the label range 1..K."""

    BUNDLE = EctState
    CLASS_PAIRS = False
    RAW_LINES = False  # VW's ect writes nothing to -r
    AUDITED_PER_CLASS = False
    NOT_LEARNED = "not learned"

    def __init__(self, config):
        super().__init__(config, problem_count(config.ect, config.error))
        self.labels = config.ect
        self.scores = False
        self.nodes, self.finals = circuit(config.ect, config.error)
        height = max(config.error, 0).bit_length()
        self.sizes = np.array([config.ect, config.error, (config.ect - 1) * (config.error + 1),
                               height], dtype=np.int64)
        self.won = np.zeros(config.error + 1, dtype=np.int8)

    def bundle(self) -> tuple:
        return self.BUNDLE(self.classes, self.nodes, self.finals, self.sizes, self.won)


    @staticmethod
    def check(arrays: dict, config) -> None:
        """A model's per-problem sums: a row per binary problem, finite and non-negative."""
        if config.ect is not None:
            OneAgainstAll.check_classes(arrays, problem_count(config.ect, config.error))

    def label_range(self, indexing: float) -> tuple[int, int]:
        """VW's ect takes classes 1..K only."""
        return 1, self.labels
