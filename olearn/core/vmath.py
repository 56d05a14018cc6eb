"""Floating-point functions that LLVM can vectorize, for the exponential-weights kernels.

numba compiles ``np.exp`` and ``np.sqrt`` of a float to calls into the C math library, one value
at a time, and a loop containing such a call is never vectorized. (numba's vector math library,
SVML, needs an SVML-patched llvmlite, which the PyPI wheels are not: ``numba -s`` reports
"llvmlite Using SVML Patched LLVM: False", so installing Intel's icc_rt cannot enable it.)
BOA's corner update costs one exp and one sqrt per corner, and its loop runs about 2.5x faster
vectorized (4 lanes with AVX2); these functions make that possible. sqrt and the powers of 2
are exact, as the library's; exp is within 1 ulp of np.exp.

The LLVM-level pieces are numba intrinsics. The command line's ahead-of-time kernels run without
numba (aot.py), where ``intrinsic`` is a stand-in and these are never called from Python: numba
and llvmlite are imported only when a call is compiled.
"""
from __future__ import annotations

import math

from numba import njit
from numba.extending import intrinsic


@intrinsic
def _as_int(typingctx, x):
    """The IEEE 754 bits of a float64, as an int64."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _as_float(typingctx, bits):
    """The float64 with these IEEE 754 bits."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def sqrt(typingctx, x):
    """√x, correctly rounded as np.sqrt (NaN below 0), as an LLVM instruction, not a call."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        return builder.call(builder.module.declare_intrinsic("llvm.sqrt", [ir.DoubleType()]),
                            args)
    return types.float64(types.float64), codegen


@intrinsic
def maximum(typingctx, a, b):
    """The larger of a and b, NaN if either is: LLVM vectorizes a running maximum of it, not
    of ``max`` (whose NaN rule depends on the argument order)."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        double = ir.DoubleType()
        function = builder.module.declare_intrinsic("llvm.maximum", [double],
                                                    ir.FunctionType(double, [double, double]))
        return builder.call(function, args)
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def add_reordered(typingctx, a, b):
    """a + b, marked reassociable: a loop summing with it may add its terms in another order
    (a few partial sums, one per vector lane), so that LLVM can vectorize it. The sum differs
    from the sequential one by rounding only."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))
    return types.float64(types.float64, types.float64), codegen


_MANTISSA = (1 << 52) - 1


@njit(cache=True, nogil=True, inline="always")
def ceil_pow2(x):
    """The least power of 2 >= x, for x >= 0 (0 for 0, inf for inf, 2^-1022 for subnormals):
    adding all ones to the mantissa carries into the exponent unless x already is a power of 2."""
    return _as_float((_as_int(x) + _MANTISSA) & ~_MANTISSA)


@njit(cache=True, nogil=True, inline="always")
def exponent(x):
    """k with 2^k <= x < 2^(k+1), for a normal x > 0 (its exponent bits)."""
    return (_as_int(x) >> 52) - 1023


@njit(cache=True, nogil=True, inline="always")
def binary_parts(x):
    """(k, 2^k, m) with x = 2^k m and 1 <= m < 2, for a normal x > 0, from its bits: k as a
    float without an integer conversion (the exponent bits under 2^52's, less 2^52), so that a
    loop of it vectorizes on any x86-64."""
    bits = _as_int(x)
    k = _as_float((bits >> 52) | _TWO_52_BITS) - (2.0 ** 52 + 1023.0)
    return k, _as_float(bits & _EXPONENT), _as_float((bits & _MANTISSA) | _ONE_BITS)


_TWO_52_BITS = 0x4330000000000000  # 2^52: its mantissa's low bits hold an integer < 2^52
_EXPONENT = 0x7FF0000000000000
_ONE_BITS = 0x3FF0000000000000


@njit(cache=True, nogil=True, inline="always")
def pow2(k):
    """2^k, for an integer -1022 <= k <= 1023 (built from its bits)."""
    return _as_float((k + 1023) << 52)


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in 32 bits: k * _LN2_HI is exact (fdlibm's split)
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 1.5 * 2.0 ** 52  # y + _ROUND rounds y to an integer, held in the low mantissa bits
# e^r = Σ r^i / i! for |r| <= ln(2) / 2: the first term left out is below 5e-18 relative
_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))


@njit(cache=True, nogil=True, inline="always")
def exp(x):
    """e^x within 1 ulp of np.exp (inf above 709.78, 0 below -745.1, NaN for NaN).

    x = k ln 2 + r with |r| <= ln(2) / 2, e^r by its Taylor polynomial, times 2^k built from
    its bits; 2^k as two factors so that results down in the subnormal range come out right.
    """
    if x < -1400.0:  # beyond both ends of float64's range; keeps each factor's exponent valid
        x = -1400.0
    elif x > 1400.0:
        x = 1400.0
    rounded = x * _LOG2E + _ROUND
    k = rounded - _ROUND
    r = x - k * _LN2_HI - k * _LN2_LO
    c = _TAYLOR
    p = c[0] + r * (c[1] + r * (c[2] + r * (c[3] + r * (c[4] + r * (c[5] + r * (c[6] + r * (
        c[7] + r * (c[8] + r * (c[9] + r * (c[10] + r * (c[11] + r * (c[12] + r * c[13]))))))))))))
    k_int = (_as_int(rounded) << 13) >> 13  # the low 51 bits, sign-extended
    half = k_int >> 1
    return p * _as_float((half + 1023) << 52) * _as_float((k_int - half + 1023) << 52)


@intrinsic
def prefetch_row(typingctx, table, row):
    """Ask the CPU to bring row ``row`` of the 2-D C-contiguous ``table`` into its caches
    (LLVM's prefetch: a hint, which never faults, whatever the row)."""
    from numba.core import types

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        array = context.make_array(signature.args[0])(context, builder, args[0])
        row_bytes = builder.extract_value(array.strides, 0)
        offset = builder.mul(context.cast(builder, args[1], signature.args[1], types.intp),
                             row_bytes)
        byte = ir.IntType(8).as_pointer()
        address = builder.gep(builder.bitcast(array.data, byte), [offset])
        i32 = ir.IntType(32)
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", [byte], ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]))
        builder.call(function, [address, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.none(table, row), codegen
