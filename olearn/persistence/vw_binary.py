"""VW's binary model files, field by field: a bounds-checked reader and the header that every
VW model file starts with (docs/vw-model-files.md).

A field is written as VW writes it: a number as its bytes (little-endian), a string as a
uint32 length and that many bytes, NUL included. The header is the version string, then (from
VW 8.0.3) the model id, the byte ``m``, the label range, the bits, ``lda``, the --ngram and
--skips definitions, the kept options, and (from 8.0.1) a checksum of the fields after the
version: from 8.0.2 a murmur hash (mmh3's, 32 bits) of each field's bytes in turn, seeded by
the hash of those before it.
"""
from __future__ import annotations

import dataclasses
import re
import struct

import mmh3

from olearn.errors import OlearnError

# The VW version whose layout olearn writes (and the last one it was tested against).
VW_LAYOUT = "9.11.9"
# VW's header rules by version (VW's vw_versions.h): the first version that has each.
OLDEST = (7, 6, 0)  # VW refuses models older than this
WITH_ID = (8, 0, 3)
WITH_CHAINED_HASH = (8, 0, 2)
WITH_HASH = (8, 0, 1)
WITH_OPTION_INTERACTIONS = (7, 10, 3)  # older headers list -q and --cubic terms themselves
WITH_INTERACTION_LIST = (7, 10, 2)  # the one version that also lists --interactions
UNTIL_RANK = (7, 8, 0)  # headers up to this one have a --rank field
MAX_STRING = 104_857_600  # VW's limit on the options' length (100 MB)
SHORT_STRING = 512  # VW's buffer for the version and the id
_VERSION = re.compile(rb"(\d{1,4})\.(\d{1,4})\.(\d{1,4})[^\0]{0,64}\0")


def version_of(data: bytes) -> tuple[int, int, int] | None:
    """The VW version a file starts with, or None if it does not start as a VW model file."""
    if len(data) < 4:
        return None
    (length,) = struct.unpack_from("<I", data)
    match = _VERSION.fullmatch(data[4:4 + length]) if 0 < length <= SHORT_STRING else None
    return tuple(int(g) for g in match.groups()) if match else None


class Reader:
    """VW's fields from a file's bytes, refusing one that ends early or says too much; while
    ``hashing``, each field's bytes chain VW's header checksum."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path, self.at = data, path, 0
        self.hashing, self.hash = False, 0

    def fail(self, what: str) -> OlearnError:
        return OlearnError(f"corrupted VW model file ({what})", self.path)

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise self.fail("it ends early")
        part = self.data[self.at:self.at + size]
        self.at += size
        if self.hashing and size:
            self.hash = mmh3.hash(part, self.hash, signed=False)
        return part

    def number(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, limit: int) -> bytes:
        """A length-prefixed string of at most ``limit`` bytes, up to its first NUL."""
        length = self.number("I")
        if length > limit:
            raise self.fail(f"a string of {length} bytes where at most {limit} fit")
        return self.take(length).split(b"\0", 1)[0]

    def left(self) -> int:
        return len(self.data) - self.at


@dataclasses.dataclass
class Header:
    """What a VW model file's header says."""

    version: tuple[int, int, int]
    min_label: float
    max_label: float
    bits: int
    options: str  # the kept options, as VW's command line spells them
    model_id: str = ""
    lda: int = 0
    rank: int = 0  # headers up to 7.8.0
    ngram: tuple[str, ...] = ()
    skips: tuple[str, ...] = ()
    interactions: tuple[str, ...] = ()  # headers before 7.10.3 list -q/--cubic terms here


def read_header(reader: Reader) -> Header:
    """The header at the start of ``reader``'s file, its checksum verified."""
    version = version_of(reader.data)
    if version is None:
        raise reader.fail("no VW version at its start")
    if version < OLDEST:
        raise OlearnError(f"VW model of version {'.'.join(map(str, version))}: olearn reads "
                          f"those of VW {'.'.join(map(str, OLDEST))} and later, as VW", reader.path)
    reader.string(SHORT_STRING)
    reader.hashing = version >= WITH_CHAINED_HASH
    model_id = reader.string(SHORT_STRING).decode("latin-1") if version >= WITH_ID else ""
    if reader.take(1) != b"m":
        raise reader.fail("not a model file: no 'm' after the version")
    min_label, max_label, bits = reader.number("f"), reader.number("f"), reader.number("I")
    interactions = _legacy_interactions(reader, version) if version < WITH_OPTION_INTERACTIONS \
        else ()
    rank = reader.number("I") if version <= UNTIL_RANK else 0
    lda = reader.number("I")
    ngram, skips = _grams(reader), _grams(reader)
    options = reader.string(MAX_STRING).decode("latin-1").strip()
    if version >= WITH_HASH:
        expected = reader.hash if version >= WITH_CHAINED_HASH else mmh3.hash(
            reader.data[:reader.at], 0, signed=False)
        reader.hashing = False
        if reader.number("I") != 4 or reader.number("I") != expected:
            raise reader.fail("its header's checksum does not match")
    return Header(version, min_label, max_label, bits, options, model_id, lda, rank, ngram,
                  skips, interactions)


def _grams(reader: Reader) -> tuple[str, ...]:
    """--ngram or --skips definitions: a count, then 3 bytes each."""
    count = reader.number("I")
    if count > reader.left() // 3:
        raise reader.fail(f"{count} --ngram/--skips definitions")
    return tuple(reader.take(3).split(b"\0", 1)[0].decode("latin-1") for _ in range(count))


def _legacy_interactions(reader: Reader, version: tuple[int, int, int]) -> tuple[str, ...]:
    """The -q pairs, --cubic triples and (in 7.10.2) --interactions of an old header."""
    terms = []
    for size in (2, 3):
        count = reader.number("I")
        if count > reader.left() // size:
            raise reader.fail(f"{count} interaction terms")
        terms += [reader.take(size).decode("latin-1") for _ in range(count)]
    if version >= WITH_INTERACTION_LIST:
        for _ in range(reader.number("I")):
            terms.append(reader.take(reader.number("I")).decode("latin-1"))
    return tuple(dict.fromkeys(terms))  # VW keeps each term once


def _string(text: bytes) -> list[bytes]:
    """A string field as VW writes it: its length (NUL included), then its bytes."""
    data = text + b"\0"
    return [struct.pack("<I", len(data)), data]


def header_bytes(min_label: float, max_label: float, bits: int, options: str,
                 ngram: tuple[str, ...] = (), skips: tuple[str, ...] = ()) -> bytes:
    """A VW 9.11.9 header (no id, no lda) for these fields, with its checksum."""
    fields = [*_string(b""), b"m", struct.pack("<f", min_label), struct.pack("<f", max_label),
              struct.pack("<I", bits), struct.pack("<I", 0)]
    for grams in (ngram, skips):
        fields.append(struct.pack("<I", len(grams)))
        fields += [gram.encode("latin-1").ljust(3, b"\0") for gram in grams]
    fields += _string(f" {options}".encode("latin-1") if options else b"")
    return b"".join([*_string(VW_LAYOUT.encode()), *fields,
                     struct.pack("<II", 4, chained_hash(fields))])


def chained_hash(chunks: list[bytes]) -> int:
    """VW's header checksum: a murmur hash of each chunk written, seeded by the hash of those
    before it (an empty chunk is not hashed)."""
    checksum = 0
    for chunk in chunks:
        if chunk:
            checksum = mmh3.hash(chunk, checksum, signed=False)
    return checksum
