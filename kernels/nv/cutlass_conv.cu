// CUTLASS 2.x implicit-GEMM forward convolution (NHWC activations, KRSC filters, NPQK output)
// on tensor cores (mma.sync, sm_80+), built by NVRTC from the pinned nvidia-cutlass wheel's
// headers (never copied into this repo). One code object per variant:
//   KILN_DTYPE_FP16 / _BF16: 16x8x16 MMA, FP32 accumulation, output in the input type;
//   KILN_DTYPE_FP32: 16x8x8 TF32 MMA, either 3xTF32 (FP32-accurate, the default) or, with
//   KILN_MATH_TF32, one TF32 product (the opt-in math mode).
// Tile: KILN_TB_M x KILN_TB_N x KILN_TB_K per block, KILN_W_M x KILN_W_N x KILN_TB_K per warp,
// KILN_STAGES pipeline stages, KILN_ALIGN elements per vector access (8 for 16-bit types
// needs C % 8 == 0 and K % 8 == 0; smaller alignments serve other channel counts).
//
// Two entry points, because CUTLASS's Params holds precomputed iterator state that only its
// own (device-compilable) constructors know how to build:
//   kiln_cutlass_params: one thread builds Params for a problem and reports its size, the
//     launch shape and where the tensor pointers sit in it (run once, at prepare time);
//   kiln_cutlass_fprop:  the convolution, taking those Params bytes by value with the
//     pointers patched in per call.
#include "kiln_gpu.h"

#include <cutlass/cutlass.h>
#include <cutlass/numeric_conversion.h>

#if defined(KILN_DTYPE_FP32) && !defined(KILN_MATH_TF32)
namespace cutlass {
// kiln's 3xTF32 split, which keeps IEEE infinities. 3xTF32 writes each operand as big + small
// (two TF32 values) and sums big*big + big*small + small*big. The stock split takes
// small = x - big, so an infinite x gets small = inf - inf = NaN, and a finite operand whose
// small part is 0 meets an infinity as inf * 0 = NaN: results that FP32 gives as +-inf came out
// NaN. Here an infinite (or NaN) x is carried by both parts, and a finite x whose remainder is
// 0 moves one TF32 ulp from big to small, so small is never 0 for a non-zero x (the sum stays
// exact; only the smallest TF32 subnormal keeps a zero big part).
template <>
struct NumericConverterFastF32<FloatRoundStyle::round_toward_zero,
                               FloatRoundStyle::round_half_ulp_truncate> {
  using result_type = Array<tfloat32_t, 2>;
  using source_type = float;
  static FloatRoundStyle const kRoundBig = FloatRoundStyle::round_toward_zero;
  static FloatRoundStyle const kRoundSmall = FloatRoundStyle::round_half_ulp_truncate;

  CUTLASS_HOST_DEVICE static result_type convert(source_type const& x) {
    result_type r;
    unsigned bits = __float_as_uint(x);
    if ((bits & 0x7f800000u) == 0x7f800000u) {
      r[0] = tfloat32_t::bitcast(bits);
      r[1] = r[0];
      return r;
    }
    unsigned big = bits & 0xffffe000u;  // toward zero: sign, exponent, top 10 mantissa bits
    float rest = x - __uint_as_float(big);  // exact in FP32
    if (rest == 0.0f && (big & 0x7fffffffu) >= 0x4000u) {
      big -= 0x2000u;  // the next TF32 value toward zero
      rest = x - __uint_as_float(big);
    }
    r[0] = tfloat32_t::bitcast(big);
    r[1] = tfloat32_t::bitcast((__float_as_uint(rest) + 0x1000u) & 0xffffe000u);
    return r;
  }

  CUTLASS_HOST_DEVICE result_type operator()(source_type const& s) const { return convert(s); }
};
}  // namespace cutlass
#endif

#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/kernel/default_conv2d_fprop.h>
#include <cutlass/conv/kernel/implicit_gemm_convolution.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

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

using KilnEpilogue = cutlass::epilogue::thread::LinearCombination<
    KilnElement, KILN_ALIGN, float, float>;

using KilnConvKernel = typename cutlass::conv::kernel::DefaultConv2dFprop<
    KilnElement, cutlass::layout::TensorNHWC,
    KilnElement, cutlass::layout::TensorNHWC,
    KilnElement, cutlass::layout::TensorNHWC,
    float,
    cutlass::arch::OpClassTensorOp,
    cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<KILN_TB_M, KILN_TB_N, KILN_TB_K>,
    cutlass::gemm::GemmShape<KILN_W_M, KILN_W_N, KILN_TB_K>,
    KilnInstruction,
    KilnEpilogue,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>,
    KILN_STAGES,
    KilnMathOp,
    cutlass::conv::IteratorAlgorithm::kOptimized,
    cutlass::conv::StrideSupport::kStrided,
    KILN_ALIGN,
    KILN_ALIGN>::Kernel;

using KilnParams = KilnConvKernel::Params;

// What kiln_cutlass_params reports: 16 ints, read by kiln's BuilderInfo (src/invoker.rs).
struct KilnBuilderInfo {
  kiln_i32 status;        // 0: CUTLASS can run the problem; otherwise cutlass::Status
  kiln_i32 params_bytes;  // sizeof(Params)
  kiln_i32 threads;       // threads per block
  kiln_i32 shared_bytes;  // dynamic shared memory per block
  kiln_i32 grid[3];       // blocks in x, y, z
  kiln_i32 offset_a;      // byte offsets of ptr_A (x), ptr_B (w), ptr_C and ptr_D (y) and the
  kiln_i32 offset_b;      // split-K semaphore inside Params
  kiln_i32 offset_c;
  kiln_i32 offset_d;
  kiln_i32 offset_semaphore;
  kiln_i32 semaphore_ints;  // ints of zeroed workspace serial split-K needs (0 without split-K)
  kiln_i32 reserved[3];
};

static __device__ kiln_i32 kiln_offset(const KilnParams* base, const void* field) {
  return (kiln_i32)((const char*)field - (const char*)base);
}

extern "C" __global__ void kiln_cutlass_params(KilnConvArgs a, kiln_i32 split_k, KilnParams* out,
                                               KilnBuilderInfo* info) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  cutlass::conv::Conv2dProblemSize problem(
      a.n, a.in_h, a.in_w, a.c, a.k, a.fil_h, a.fil_w, a.out_h, a.out_w, a.pad_h, a.pad_w,
      a.stride_h, a.stride_w, a.dil_h, a.dil_w, cutlass::conv::Mode::kCrossCorrelation,
      split_k, a.groups);
  using Op = cutlass::conv::Operator;
  cutlass::Status status = KilnConvKernel::Mma::IteratorA::can_implement(problem);
  if (status == cutlass::Status::kSuccess)
    status = KilnConvKernel::Mma::IteratorB::can_implement(problem);
  if (status == cutlass::Status::kSuccess && (a.k % KILN_ALIGN != 0 || a.groups != 1))
    status = cutlass::Status::kErrorInvalidProblem;
  typename KilnConvKernel::TensorRefA ref_a(
      nullptr, cutlass::layout::TensorNHWC::packed(
                   cutlass::conv::implicit_gemm_tensor_a_extent(Op::kFprop, problem)));
  typename KilnConvKernel::TensorRefB ref_b(
      nullptr, cutlass::layout::TensorNHWC::packed(
                   cutlass::conv::implicit_gemm_tensor_b_extent(Op::kFprop, problem)));
  typename KilnConvKernel::TensorRefC ref_c(
      nullptr, cutlass::layout::TensorNHWC::packed(
                   cutlass::conv::implicit_gemm_tensor_c_extent(Op::kFprop, problem)));
  typename KilnConvKernel::Arguments args(problem, ref_a, ref_b, ref_c, ref_c,
                                          typename KilnEpilogue::Params(1.0f, 0.0f),
                                          cutlass::conv::SplitKMode::kSerial);
  *out = KilnParams(args, nullptr);
  cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1> swizzle;
  dim3 grid = swizzle.get_grid_shape(out->grid_tiled_shape);
  info->status = (kiln_i32)status;
  info->params_bytes = (kiln_i32)sizeof(KilnParams);
  info->threads = KilnConvKernel::kThreadCount;
  info->shared_bytes = (kiln_i32)sizeof(typename KilnConvKernel::SharedStorage);
  info->grid[0] = (kiln_i32)grid.x;
  info->grid[1] = (kiln_i32)grid.y;
  info->grid[2] = (kiln_i32)grid.z;
  info->offset_a = kiln_offset(out, &out->ptr_A);
  info->offset_b = kiln_offset(out, &out->ptr_B);
  info->offset_c = kiln_offset(out, &out->ptr_C);
  info->offset_d = kiln_offset(out, &out->ptr_D);
  info->offset_semaphore = kiln_offset(out, &out->semaphore);
  info->semaphore_ints =
      split_k > 1 ? out->grid_tiled_shape.m() * out->grid_tiled_shape.n() : 0;
  info->reserved[0] = info->reserved[1] = info->reserved[2] = 0;
}

extern "C" __global__ void __launch_bounds__(KilnConvKernel::kThreadCount)
    kiln_cutlass_fprop(__grid_constant__ const KilnParams params) {
  extern __shared__ __align__(16) unsigned char kiln_smem[];
  KilnConvKernel op;
  op(params, *reinterpret_cast<typename KilnConvKernel::SharedStorage*>(kiln_smem));
}
