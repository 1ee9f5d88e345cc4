// A CUTLASS kernel variant's element type, MMA instruction and math operator, and the check
// that its perf config is given, from the -D options kiln-tools builds it with (the CUTLASS
// sources in kernels/nv/):
//   KILN_DTYPE_FP16 / _BF16: 16x8x16 MMA, FP32 accumulation, output in the input type;
//   KILN_DTYPE_FP32: 16x8x8 TF32 MMA, either 3xTF32 (FP32-accurate, the default) or, with
//   KILN_MATH_TF32, one TF32 product (the opt-in math mode);
//   KILN_TB_M/N/K, KILN_W_M/N, KILN_STAGES, KILN_ALIGN: block tile, warp tile, pipeline stages
//   and elements per vector access.
// It also gives 3xTF32 kiln's operand split, which keeps infinities (below); include it before
// any CUTLASS kernel header.
#pragma once
#include <cutlass/arch/mma.h>
#include <cutlass/gemm/gemm.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>

#if defined(KILN_DTYPE_FP16)
using KilnElement = cutlass::half_t;
using KilnInstruction = cutlass::gemm::GemmShape<16, 8, 16>;
using KilnMathOp = cutlass::arch::OpMultiplyAdd;
#elif defined(KILN_DTYPE_BF16)
using KilnElement = cutlass::bfloat16_t;
using KilnInstruction = cutlass::gemm::GemmShape<16, 8, 16>;
using KilnMathOp = cutlass::arch::OpMultiplyAdd;
#elif defined(KILN_DTYPE_FP32)
using KilnElement = float;
using KilnInstruction = cutlass::gemm::GemmShape<16, 8, 8>;
#if defined(KILN_MATH_TF32)
using KilnMathOp = cutlass::arch::OpMultiplyAdd;
#else
using KilnMathOp = cutlass::arch::OpMultiplyAddFastF32;  // 3xTF32: big*big + big*small + small*big
#endif
#else
#error "define KILN_DTYPE_FP16, KILN_DTYPE_BF16 or KILN_DTYPE_FP32"
#endif

#if !defined(KILN_TB_M) || !defined(KILN_TB_N) || !defined(KILN_TB_K) || !defined(KILN_W_M) || \
    !defined(KILN_W_N) || !defined(KILN_STAGES) || !defined(KILN_ALIGN)
#error "the perf config defines KILN_TB_M/N/K, KILN_W_M/N, KILN_STAGES and KILN_ALIGN"
#endif

#if defined(KILN_DTYPE_FP32) && !defined(KILN_MATH_TF32)
namespace cutlass {
// kiln's 3xTF32 split, which keeps IEEE infinities (this header comes before any CUTLASS
// kernel header, so every 3xTF32 kernel uses it). 3xTF32 writes each operand as big + small
// (two TF32 values) and sums big*big + big*small + small*big. CUTLASS's split takes
// small = x - big, so an infinite x gets small = inf - inf = NaN and every result it touches
// comes out NaN where FP32 gives +-inf. Here a non-finite x rides in the small part with a big
// part of 0: inf*w then arrives through small*big as +-inf (w's big part is 0 only for w = 0,
// where FP32 also gives NaN, or below 2^-136), and NaN stays NaN. The one case left: inf times
// inf gives NaN (0*inf in a cross term). Branch-free: three more operations than CUTLASS's
// split, which the inner loop runs for every operand element.
template <>
struct NumericConverterFastF32<FloatRoundStyle::round_toward_zero,
                               FloatRoundStyle::round_half_ulp_truncate> {
  using result_type = Array<tfloat32_t, 2>;
  using source_type = float;
  static FloatRoundStyle const kRoundBig = FloatRoundStyle::round_toward_zero;
  static FloatRoundStyle const kRoundSmall = FloatRoundStyle::round_half_ulp_truncate;

  CUTLASS_HOST_DEVICE static result_type convert(source_type const& x) {
    unsigned bits = __float_as_uint(x);
    bool special = (bits & 0x7f800000u) == 0x7f800000u;
    unsigned big = special ? 0u : (bits & 0xffffe000u);  // toward zero: top 10 mantissa bits
    float rest = special ? x : x - __uint_as_float(big);  // exact in FP32
    result_type r;
    r[0] = tfloat32_t::bitcast(big);
    r[1] = tfloat32_t::bitcast((__float_as_uint(rest) + 0x1000u) & 0xffffe000u);
    return r;
  }

  CUTLASS_HOST_DEVICE result_type operator()(source_type const& s) const { return convert(s); }
};
}  // namespace cutlass
#endif
