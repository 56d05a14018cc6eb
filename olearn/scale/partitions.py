"""--dask's partitions: the files of ``-d``, or newline-aligned byte ranges of plain files, and
where each is read (its text, or a cache in its worker's local directory)."""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import math
import os
from typing import Iterator

from olearn.data import cache, matrices, sources
from olearn.data.multiline import chosen as multiline_examples
from olearn.engine.passes import DataPlan
from olearn.errors import OlearnError, OptionError
from olearn.options.config import Config

GZIP_MAGIC = b"\x1f\x8b"


@dataclasses.dataclass(frozen=True)
class Partition:
    """One task's data: a whole file, or the lines of a plain file starting in a byte range."""

    path: str
    byte_range: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.byte_range is None:
            return self.path
        return f"{self.path}[{self.byte_range[0]}:{self.byte_range[1]}]"

    def fingerprint(self, config: Config) -> dict:
        """What a cache of the partition depends on: the file's name, size and time, the byte
        range and the parsing options."""
        found = cache.fingerprint(config, [self.path])
        found["sources"][0][0] = str(self)  # also the cached batches' source name
        return found

    def plan(self, config: Config, pass_no: int, directory: str | None = None) -> DataPlan:
        """Where a task reads the partition: with -c, from a cache in its worker's local
        directory (``directory``; None: the running task's worker's), written by the first
        pass that runs the partition there (-k: rebuilt in pass 1); otherwise the text, in
        every pass."""
        if not config.cache:
            return DataPlan(dataclasses.replace(config, passes=1), [self.path], self.blocks)
        if directory is None:
            from distributed import get_worker
            directory = get_worker().local_directory
        fingerprint = self.fingerprint(config)
        name = hashlib.sha1(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:24]
        path = os.path.join(directory, f"olearn-{name}.cache")
        return DataPlan(dataclasses.replace(config, cache_file=path,
                                            kill_cache=config.kill_cache and pass_no == 0),
                        [self.path], self.blocks, fingerprint)

    def blocks(self) -> Iterator[sources.Block]:
        for block in sources.blocks_of(self.path, [0], byte_range=self.byte_range):
            block.source = str(self)  # a pass over a partition is a pass over one source
            yield block


def _is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def partitions(patterns: list[str], minimum: int = 0) -> list[Partition]:
    """The partitions of ``-d`` (globs expanded, in sorted order within each pattern): one per
    file, and plain-text files split at line boundaries into parts of about equal size when
    that is needed for at least ``minimum`` partitions (a gzip stream can only be read from its
    start, so a .gz file is always one partition)."""
    if not patterns or "-" in patterns:
        raise OptionError("--dask reads data files (-d), not stdin: the workers open them")
    files = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not found:
            raise OlearnError("no file matches this pattern", pattern)
        files += found
    sources.check_readable(files)
    plain = [path for path in files if not _is_gzip(path)]
    sizes = {path: os.path.getsize(path) for path in plain}
    wanted = minimum - (len(files) - len(plain))
    total = sum(sizes.values())
    if minimum <= len(files) or total == 0:
        return [Partition(path) for path in files]
    out = []
    for path in files:
        if path not in sizes or sizes[path] == 0:
            out.append(Partition(path))
            continue
        size = sizes[path]
        parts = min(size, max(1, math.ceil(wanted * size / total)))
        cuts = [size * k // parts for k in range(parts + 1)]
        out += [Partition(path, (a, b)) for a, b in zip(cuts, cuts[1:])]
    return out


@dataclasses.dataclass(frozen=True)
class InMemory:
    """A partition of a Dask collection given to Learner.fit: its examples (lines, or a matrix
    with its labels and importances), futures on the client and their values on the worker
    (:func:`shipped`)."""

    number: int
    data: object
    y: object = None
    weight: object = None
    namespaces: dict | None = None

    def __str__(self) -> str:
        return f"partition {self.number} of the Dask collection"

    def plan(self, config: Config, pass_no: int, directory: str | None = None) -> "InMemoryPlan":
        """Where a task reads the partition: from the worker's memory, in every pass."""
        return InMemoryPlan(self, config)


class InMemoryPlan:
    """The batches of an in-memory partition (DataPlan's interface, without a cache)."""

    def __init__(self, part: InMemory, config: Config):
        self.part, self.config = part, config

    def batches(self, learner, pass_no: int) -> Iterator:
        data, y, weight = self.part.data, self.part.y, self.part.weight
        if matrices.is_matrix(data):
            yield from matrices.batches(data, y, weight, self.config, self.part.namespaces, False)
            return
        yield from learner.batches(self._blocks(data))

    def _blocks(self, lines) -> Iterator[sources.Block]:
        for block in sources.blocks_of_lines(list(lines),
                                             multiline=multiline_examples(self.config)):
            block.source = str(self.part)  # errors name the partition
            yield block

    def discard(self) -> None:
        """Nothing to discard: no cache."""


def shipped(part: Partition | InMemory):
    """What a task or actor is given for ``part``: a file's partition as it is, an in-memory
    one as a tuple of its fields, whose futures Dask replaces by their values on the worker
    (it looks inside tuples, not inside other objects)."""
    if isinstance(part, InMemory):
        return tuple(getattr(part, field.name) for field in dataclasses.fields(part))
    return part


def received(part) -> Partition | InMemory:
    """The partition a task or actor was given (:func:`shipped`)."""
    return InMemory(*part) if isinstance(part, tuple) else part
