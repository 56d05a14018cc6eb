"""MurmurHash3 and VW's hashers against mmh3 and the worked examples of vw-reference.md §2.1."""
import mmh3
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from olearn.data.hashing import CONSTANT_HASH, hash_bytes, hash_name, murmur3_32, namespace_hash

MASK18 = (1 << 18) - 1


def _reference_strings_hash(name: bytes, seed: int) -> int:
    """VW's 'strings' hasher, written plainly from the reference text."""
    trimmed = name.strip(bytes(range(33)))
    if all(48 <= c <= 57 for c in trimmed):  # an empty name is "all digits": 0 + seed
        return (int(trimmed or b"0") + seed) & 0xFFFFFFFF
    return mmh3.hash(trimmed, seed, signed=False)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.integers(0, 2**32 - 1))
def test_murmur3_equals_mmh3(data, seed):
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    assert murmur3_32(buf, 0, len(data), seed) == mmh3.hash(data, seed, signed=False)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=12), st.from_regex(rb"\A[ 0-9]{1,25}\Z")),
       st.integers(0, 2**32 - 1))
def test_strings_hasher_equals_reference(name, seed):
    assert hash_bytes(name, seed) == _reference_strings_hash(name, seed)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=12), st.from_regex(rb"\A[ 0-9]{1,25}\Z")),
       st.integers(0, 2**32 - 1), st.booleans())
def test_kernel_hasher_equals_python_hasher(name, seed, hash_all):
    buf = np.frombuffer(name, dtype=np.uint8) if name else np.zeros(0, dtype=np.uint8)
    assert hash_name(buf, 0, len(name), seed, hash_all) == hash_bytes(name, seed, hash_all)


def test_hash_all_uses_murmur_for_numbers():
    assert hash_bytes(b"12", 5, hash_all=True) == mmh3.hash(b"12", 5, signed=False)
    assert hash_bytes(b"12", 5) == 17


def test_worked_examples_of_the_reference():
    ns_a = namespace_hash(b"a")
    assert ns_a == 1009084850
    assert hash_bytes(b"x", ns_a) & MASK18 == 55432
    assert hash_bytes(b"3", ns_a) & MASK18 == 92597
    assert hash_bytes(b"012", ns_a) & MASK18 == 92606
    assert hash_bytes(b"-5", ns_a) & MASK18 == 20435
    assert hash_bytes(b"a", namespace_hash(b" ")) & MASK18 == 92594
    assert hash_bytes(b"x", namespace_hash(b"1")) & MASK18 == 174622
    assert hash_bytes(b"abc", hash_bytes(b"x", ns_a)) & MASK18 == 249710
    assert CONSTANT_HASH & MASK18 == 116060
    assert CONSTANT_HASH & ((1 << 24) - 1) == 11650396


def test_default_namespace_seed_depends_on_hash_seed():
    assert namespace_hash(b" ", 0) == 0
    assert namespace_hash(b" ", 7) == mmh3.hash(b"", 7, signed=False)
