// NCHW 1x1 convolution (no padding, one group) as CUTLASS 2.x batched GEMM on tensor cores,
// built by NVRTC from the pinned nvidia-cutlass wheel's headers (never copied into this repo).
// In NCHW, image n of a stride-1 1x1 convolution is a plain matrix product with no copy:
//   y[n] (K x PQ, row-major) = w (K x C, row-major: KCRS with R = S = 1) * x[n] (C x PQ,
//   row-major),
// so the batch is N GEMMs of M = K, N = P*Q, K = C, with w shared (batch stride 0) and x and y
// strided by C*P*Q and K*P*Q. With a stride, the pixels the product reads are not one matrix:
// kiln_cutlass_subsample first copies them, (N, C, P, Q), into the workspace (reading every
// stride-th row of x and writing a quarter of x at stride 2), and the product reads the copy.
// The NHWC kernels reach NCHW layers only through transposes of x and y
// (kernels/nv/cutlass_conv.cu, KILN_NCHW), which for a 1x1 layer cost more than the product.
// A 3-D NCDHW 1x1x1 layer is the same product over the Z*P*Q output pixels of each image, its
// strided pixels copied the same way over depth, height and width.
//
// One code object per variant:
//   KILN_DTYPE_FP32: 16x8x8 TF32 MMA, 3xTF32 (FP32-accurate) unless KILN_MATH_TF32;
//   KILN_DTYPE_FP16 / _BF16: 16x8x16 MMA, FP32 accumulation.
// Tile: KILN_TB_M x KILN_TB_N x KILN_TB_K per block, KILN_W_M x KILN_W_N per warp, KILN_STAGES
// stages, KILN_ALIGN elements per vector access (C and H*W must be multiples of it).
//
// Entry points, as for the convolution kernels (kernels/library_abi.h): kiln_cutlass_params
// builds the batched GEMM's Params for a problem on the device and reports where the pointers
// sit (w is the GEMM's A operand, x its B: the report names them by tensor; with a stride, x's
// is the workspace's copy); kiln_cutlass_subsample makes that copy; kiln_cutlass_fprop runs the
// product.
#include "kiln_gpu.h"
#include "library_abi.h"

#include <cutlass/cutlass.h>

#include "cutlass_config.h"

#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/kernel/default_gemm.h>
#include <cutlass/gemm/kernel/gemm_batched.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

using KilnEpilogue =
    cutlass::epilogue::thread::LinearCombination<KilnElement, KILN_ALIGN, float, float>;
using KilnSwizzle = cutlass::gemm::threadblock::GemmBatchedIdentityThreadblockSwizzle;
using KilnRowMajor = cutlass::layout::RowMajor;

using KilnDefaultGemm = typename cutlass::gemm::kernel::DefaultGemm<
    KilnElement, KilnRowMajor, KILN_ALIGN,  // A: w, K x C
    KilnElement, KilnRowMajor, KILN_ALIGN,  // B: x[n], C x HW
    KilnElement, KilnRowMajor,              // C, D: y[n], K x HW
    float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<KILN_TB_M, KILN_TB_N, KILN_TB_K>,
    cutlass::gemm::GemmShape<KILN_W_M, KILN_W_N, KILN_TB_K>, KilnInstruction, KilnEpilogue,
    KilnSwizzle, KILN_STAGES, false, KilnMathOp>::GemmKernel;

using KilnGemmKernel =
    cutlass::gemm::kernel::GemmBatched<typename KilnDefaultGemm::Mma,
                                       typename KilnDefaultGemm::Epilogue, KilnSwizzle>;

// The batched GEMM's Params, and a slot for the split-K semaphore pointer the invoker patches
// into every library block (the batched kernel has no split-K; nothing reads it).
struct KilnParams {
  typename KilnGemmKernel::Params gemm;
  void* unused_semaphore;
};

// Whether the product reads a strided copy of x rather than x itself.
static __device__ bool kiln_strided(const KilnConvArgs& a) {
  return a.stride_d != 1 || a.stride_h != 1 || a.stride_w != 1;
}

extern "C" __global__ void kiln_cutlass_params(KilnConvArgs a, kiln_i32 split_k, KilnParams* out,
                                               KilnBuilderInfo* info) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const kiln_i64 all_pixels = (kiln_i64)a.out_d * a.out_h * a.out_w;
  const int pixels = all_pixels <= 0x7fffffff ? (int)all_pixels : 0;
  const cutlass::gemm::GemmCoord size(a.k, pixels, a.c);
  cutlass::Status status = cutlass::Status::kSuccess;
  // A 1x1(x1), unpadded, ungrouped NC[D]HW problem whose output pixels are every stride-th
  // input pixel (a 2-D one has depth 1); the GEMM's 32-bit extents; alignment along C and
  // the pixels.
  if (a.channels_last != 0 || a.groups != 1 || a.fil_d != 1 || a.fil_h != 1 || a.fil_w != 1 ||
      a.stride_d < 1 || a.stride_h < 1 || a.stride_w < 1 || a.pad_d != 0 || a.pad_h != 0 ||
      a.pad_w != 0 || a.in_d < 1 || a.out_d != (a.in_d - 1) / a.stride_d + 1 ||
      a.out_h != (a.in_h - 1) / a.stride_h + 1 || a.out_w != (a.in_w - 1) / a.stride_w + 1 ||
      pixels == 0 || split_k != 1 || a.c % KILN_ALIGN != 0 || pixels % KILN_ALIGN != 0)
    status = cutlass::Status::kErrorInvalidProblem;
  KilnSwizzle swizzle;
  const cutlass::gemm::GemmCoord tiles = swizzle.get_tiled_shape(
      size, cutlass::gemm::GemmCoord(KILN_TB_M, KILN_TB_N, KILN_TB_K), a.n);
  // Stand-in pointers, each found again below at the offset reported for it.
  KilnElement* const marks[3] = {reinterpret_cast<KilnElement*>(0x1000),
                                 reinterpret_cast<KilnElement*>(0x2000),
                                 reinterpret_cast<KilnElement*>(0x3000)};
  typename KilnGemmKernel::Mma::IteratorA::TensorRef ref_w(marks[1], KilnRowMajor(a.c));
  typename KilnGemmKernel::Mma::IteratorB::TensorRef ref_x(marks[0], KilnRowMajor(pixels));
  typename KilnGemmKernel::Epilogue::OutputTileIterator::TensorRef ref_y(marks[2],
                                                                         KilnRowMajor(pixels));
  out->gemm = typename KilnGemmKernel::Params(
      size, tiles, ref_w, 0, ref_x, (int64_t)a.c * pixels, ref_y, (int64_t)a.k * pixels, ref_y,
      (int64_t)a.k * pixels, typename KilnEpilogue::Params(1.0f, 0.0f), a.n);
  out->unused_semaphore = nullptr;
  const dim3 grid = swizzle.get_grid_shape(tiles);
  kiln_report_launch<KilnGemmKernel, KilnParams>(info, (kiln_i32)status, grid);
  // A TensorRef holds its pointer first; checked against the stand-ins, then cleared.
  info->offset_a = kiln_offset(out, &out->gemm.ref_B);
  info->offset_b = kiln_offset(out, &out->gemm.ref_A);
  info->offset_c = kiln_offset(out, &out->gemm.ref_C);
  info->offset_d = kiln_offset(out, &out->gemm.ref_D);
  const kiln_i32 offsets[4] = {info->offset_a, info->offset_b, info->offset_c, info->offset_d};
  for (int i = 0; i < 4; ++i) {
    void** slot = reinterpret_cast<void**>(reinterpret_cast<char*>(out) + offsets[i]);
    if (*slot != marks[i < 3 ? i : 2]) info->status = (kiln_i32)cutlass::Status::kErrorInternal;
    *slot = nullptr;
  }
  info->offset_semaphore = kiln_offset(out, &out->unused_semaphore);
  info->semaphore_ints = 0;
  info->a_in_workspace = kiln_strided(a) ? 0 : -1;
  info->b_in_workspace = -1;
  info->semaphore_in_workspace = 0;
  info->y_in_workspace = -1;
}

// x (N, C, [D,] H, W) -> its every stride-th pixel, (N, C, [Z,] P, Q), at the workspace's
// start: one thread per copied element, grid-strided, consecutive threads along Q.
extern "C" __global__ void __launch_bounds__(256)
    kiln_cutlass_subsample(__grid_constant__ const KilnParams, KilnPointers p, KilnConvArgs a) {
  const kiln_i64 out_plane = (kiln_i64)a.out_h * a.out_w;
  const kiln_i64 planes = (kiln_i64)a.n * a.c, pixels = a.out_d * out_plane;
  const kiln_i64 all = planes * pixels, in_plane = (kiln_i64)a.in_h * a.in_w;
  const kiln_i64 in_volume = a.in_d * in_plane;
  const KilnElement* x = static_cast<const KilnElement*>(p.x);
  KilnElement* copy = static_cast<KilnElement*>(p.workspace);
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < all;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    const kiln_i64 plane = i / pixels;
    const kiln_i64 pixel = i - plane * pixels;
    const kiln_i64 depth = pixel / out_plane;
    const kiln_i32 in_slice = (kiln_i32)(pixel - depth * out_plane);
    const kiln_i32 row = in_slice / a.out_w, col = in_slice - row * a.out_w;
    copy[i] = x[plane * in_volume + depth * a.stride_d * in_plane +
                (kiln_i64)row * a.stride_h * a.in_w + (kiln_i64)col * a.stride_w];
  }
}

extern "C" __global__ void __launch_bounds__(KilnGemmKernel::kThreadCount)
    kiln_cutlass_fprop(__grid_constant__ const KilnParams params, KilnPointers, KilnConvArgs) {
  extern __shared__ __align__(16) unsigned char kiln_smem[];
  KilnGemmKernel op;
  op(params.gemm, *reinterpret_cast<typename KilnGemmKernel::SharedStorage*>(kiln_smem));
}
