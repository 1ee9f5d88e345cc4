// A CUTLASS kernel variant's element type, MMA instruction and math operator, and the check
// that its perf config is given, from the -D options kiln-tools builds it with (the CUTLASS
// sources in kernels/nv/):
//   KILN_DTYPE_FP16 / _BF16: 16x8x16 MMA, FP32 accumulation, output in the input type;
//   KILN_DTYPE_FP32: 16x8x8 TF32 MMA, either 3xTF32 (FP32-accurate, the default) or, with
//   KILN_MATH_TF32, one TF32 product (the opt-in math mode);
//   KILN_TB_M/N/K, KILN_W_M/N, KILN_STAGES, KILN_ALIGN: block tile, warp tile, pipeline stages
//   and elements per vector access.
#pragma once
#include <cutlass/arch/mma.h>
#include <cutlass/gemm/gemm.h>
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
