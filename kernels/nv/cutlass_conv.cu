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
// KILN_FIXED_CHANNELS (a first layer's 3 or 4 input channels): x and w are first copied into
// the workspace with their channels padded to 4 (kiln_cutlass_pad_channels), and the
// convolution runs CUTLASS's fixed-channels iterators on the padded copies, whose reduction runs
// over filter position x 4 channels (a 7x7x3 filter: 49 vectors of 4, not 49 of 8), the
// activation iterator masked at the reduction's end (KilnActivationIterator).
//
// KILN_NCHW (channels-first tensors): x (N,C,H,W) and w (K,C,R,S) are first transposed into
// the workspace as NHWC and KRSC (kiln_cutlass_nchw_in; a 1x1 filter's KCRS is already KRSC
// and is read in place), the convolution writes an NPQK y into
// the workspace, and kiln_cutlass_nchw_out transposes it into the caller's (N,K,P,Q) y: the
// NHWC tensor-core kernel serving channels-first problems, ranked by measurement against the
// channels-first CUDA-core kernels.
//
// KILN_FIXED_CHANNELS with KILN_NCHW (a channels-first first layer): the padding kernel reads x
// (N,C,H,W) and w (K,C,R,S) and writes the padded NHWC / KRSC copies in one pass, the
// fixed-channels convolution writes an NPQK y into the workspace, and kiln_cutlass_nchw_out
// transposes it into the caller's y.
//
// KILN_GROUPED (grouped convolution, NHWC, K/groups filters of C/groups channels each): CUTLASS's
// group fprop with optimized iterators, a block computing part of one group (K/groups a
// multiple of the tile's N). Its activation loads are masked at the group's last channel
// (KilnActivationIterator), so a reduction tile wider than C/groups reads no neighbouring
// group's pixels (an inf there would add inf*0 = NaN). CUTLASS's other mode, a block over
// several whole groups against weights zeroed between them, cannot be made exact: an inf pixel
// of one group meets the zero weights of every other group in the tile (measured: NaN where
// the reference has +-inf), so it is not built.
//
// KILN_3D with KILN_NCHW (3-D channels-first): the transposes above over depth, height and width,
// around the 3-D kernel (C and K multiples of the vector width: no channel padding).
//
// KILN_3D (3-D convolution, NDHWC activations, KTRSC filters, NZPQK output): CUTLASS's Conv3d
// fprop with optimized iterators, which load 16 bytes a vector (KILN_ALIGN 8 for FP16/BF16, 4
// for FP32). Where C is not a multiple of the vector width (a video network's RGB stem, 45 or
// 921 channels of a (2+1)-D block), x and w are first copied into the workspace with their
// channels padded to the next multiple (kiln_cutlass_pad_channels), zeros after C.
//
// Entry points. CUTLASS's Params holds precomputed iterator state that only its own
// (device-compilable) constructors know how to build, so:
//   kiln_cutlass_params: one thread builds Params for a problem and reports its size, the
//     launch shape and where the tensor pointers sit in it (run once, at prepare time);
//   kiln_cutlass_fprop:  the convolution, taking those Params bytes by value with the
//     pointers patched in per call;
//   kiln_cutlass_pad_channels (KILN_FIXED_CHANNELS only): the channel padding;
//   kiln_cutlass_nchw_in, kiln_cutlass_nchw_out (KILN_NCHW only): the layout transforms.
// Every launched entry takes (Params, KilnPointers, KilnConvArgs), so one argument list serves
// a plan of several kernels.
#include "kiln_gpu.h"
#include "library_abi.h"

#include <cutlass/cutlass.h>

#include "cutlass_config.h"

#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/kernel/default_conv2d_fprop.h>
#if defined(KILN_3D)
#include <cutlass/conv/conv3d_problem_size.h>
#include <cutlass/conv/kernel/default_conv3d_fprop.h>
#endif
#if defined(KILN_GROUPED)
#include <cutlass/conv/kernel/default_conv2d_group_fprop.h>
#endif
#include <cutlass/conv/kernel/implicit_gemm_convolution.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

#if defined(KILN_FIXED_CHANNELS)
#define KILN_ITERATOR cutlass::conv::IteratorAlgorithm::kFixedChannels
#else
#define KILN_ITERATOR cutlass::conv::IteratorAlgorithm::kOptimized
#endif

// KILN_ALIGN_OUT: elements per output store (K must be a multiple); KILN_ALIGN unless the
// variant writes one element at a time to serve any K (3 RGB channels, 255 detection outputs).
#if !defined(KILN_ALIGN_OUT)
#define KILN_ALIGN_OUT KILN_ALIGN
#endif

using KilnEpilogue = cutlass::epilogue::thread::LinearCombination<
    KilnElement, KILN_ALIGN_OUT, float, float>;

#if defined(KILN_3D)
using KilnProblemSize = cutlass::conv::Conv3dProblemSize;
using KilnTensorLayout = cutlass::layout::TensorNDHWC;
#else
using KilnProblemSize = cutlass::conv::Conv2dProblemSize;
using KilnTensorLayout = cutlass::layout::TensorNHWC;
#endif

#if defined(KILN_3D)
static_assert(KILN_ALIGN * cutlass::sizeof_bits<KilnElement>::value == 128,
              "CUTLASS's 3-D iterators load 16 bytes a vector");
using KilnDefaultKernel = typename cutlass::conv::kernel::DefaultConv3dFprop<
    KilnElement, cutlass::layout::TensorNDHWC,
    KilnElement, cutlass::layout::TensorNDHWC,
    KilnElement, cutlass::layout::TensorNDHWC,
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
    cutlass::conv::StrideSupport::kStrided>::Kernel;
#else
// The library's default kernel: CUTLASS's group fprop (which takes a group mode before its
// iterator algorithm, always the optimized one here) or its plain fprop.
#if defined(KILN_GROUPED)
#define KILN_GROUP_MODE cutlass::conv::GroupMode::kSingleGroup
#define KILN_DEFAULT_FPROP cutlass::conv::kernel::DefaultConv2dGroupFprop
#define KILN_GROUP_MODE_ARG KILN_GROUP_MODE,
#else
#define KILN_DEFAULT_FPROP cutlass::conv::kernel::DefaultConv2dFprop
#define KILN_GROUP_MODE_ARG
#endif
using KilnDefaultKernel = typename KILN_DEFAULT_FPROP<
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
    KILN_GROUP_MODE_ARG
    KILN_ITERATOR,
    cutlass::conv::StrideSupport::kStrided,
    KILN_ALIGN,
    KILN_ALIGN>::Kernel;
#endif

#if defined(KILN_FIXED_CHANNELS) || defined(KILN_GROUPED)
// CUTLASS's activation iterator with the base's types and the one piece of position state its
// masking wrappers below both need: which access of the thread's vector the next get() or
// valid() concerns. The wrappers add a condition to valid() and follow the base's position
// arithmetic, since its members are private.
template <typename Base>
class KilnVectorAccessIterator : public Base {
 public:
  using Params = typename Base::Params;
  using Element = typename Base::Element;
  using Index = typename Base::Index;

  CUTLASS_HOST_DEVICE KilnVectorAccessIterator(Params const& params,
                                               cutlass::conv::Conv2dProblemSize const& problem,
                                               Element const* ptr, int thread_idx,
                                               cutlass::MatrixCoord const& tile_offset)
      : Base(params, problem, ptr, thread_idx, tile_offset), access_(0) {}

  CUTLASS_HOST_DEVICE void set_iteration_index(Index index) {
    Base::set_iteration_index(index);
    access_ = index % Base::kAccessesPerVector;
  }

  CUTLASS_HOST_DEVICE KilnVectorAccessIterator& operator++() {
    Base::operator++();
    access_ = (access_ + 1) % Base::kAccessesPerVector;
    return *this;
  }

 protected:
  int access_;  // which access of the vector the next get() / valid() concerns
};
#endif

#if defined(KILN_FIXED_CHANNELS)
// CUTLASS's fixed-channels activation iterator masks a load only by the image's bounds, not by
// the reduction's end: in the last reduction tile (R*S*4 is rarely a multiple of the tile's K),
// positions past R*S map to filter rows r >= R, that is to real pixels outside the output's
// window, and meet zero weights there. Finite pixels add 0, but an inf or NaN pixel adds
// inf*0 = NaN to outputs whose window does not contain it. This iterator adds to valid() that
// the filter position it loads is below R*S: the thread's first position in the tile, plus the
// access within the thread's vector, plus a tile's positions per advance.
template <typename Base>
class KilnActivationIterator : public KilnVectorAccessIterator<Base> {
  using Access = KilnVectorAccessIterator<Base>;

 public:
  CUTLASS_HOST_DEVICE KilnActivationIterator(
      typename Access::Params const& params, cutlass::conv::Conv2dProblemSize const& problem,
      typename Access::Element const* ptr, int thread_idx,
      cutlass::MatrixCoord const& tile_offset = cutlass::MatrixCoord())
      : Access(params, problem, ptr, thread_idx, tile_offset),
        position_((tile_offset.column() +
                   Base::ThreadMap::initial_offset(thread_idx).contiguous()) /
                  Base::AccessType::kElements),
        positions_(problem.R * problem.S),
        step_(Base::kFilterPositionsPerTile * problem.split_k_slices) {}

  CUTLASS_HOST_DEVICE void advance() {
    Base::advance();
    position_ += step_;
  }

  CUTLASS_HOST_DEVICE bool valid() const {
    return position_ + this->access_ < positions_ && Base::valid();
  }

 private:
  int position_;   // first filter position of this thread's vector in the current tile
  int positions_;  // R * S
  int step_;       // positions one advance() moves past
};
#elif defined(KILN_GROUPED)
// CUTLASS's group-fprop activation iterators mask a load by the tensor's channel count, not the
// group's: where C/groups is not a multiple of the tile's K, the last reduction tile of a group
// reads the next group's channels against zero weights, and an inf or NaN there turns outputs
// of this group into NaN. This iterator adds the group's bound to valid(). A thread's channel
// within its group is its first channel in the tile, plus a tile's K per pass over the filter
// positions, plus the access within its vector (the kernel runs one group's tiles, so the pass
// count never wraps to another group).
template <typename Base>
class KilnActivationIterator : public KilnVectorAccessIterator<Base> {
  using Access = KilnVectorAccessIterator<Base>;

 public:
  CUTLASS_HOST_DEVICE KilnActivationIterator(
      typename Access::Params const& params, cutlass::conv::Conv2dProblemSize const& problem,
      typename Access::Element const* ptr, int thread_idx,
      cutlass::MatrixCoord const& tile_offset = cutlass::MatrixCoord())
      : Access(params, problem, ptr, thread_idx, tile_offset),
        channel_(Base::ThreadMap::initial_offset(thread_idx).contiguous()),
        step_(0),
        taps_(problem.R * problem.S),
        group_channels_(problem.C / problem.groups) {}

  CUTLASS_HOST_DEVICE void advance() {
    Base::advance();
    ++step_;
  }

  // Not const: the optimized base's valid() is not.
  CUTLASS_HOST_DEVICE bool valid() {
    return channel_ + (step_ / taps_) * KILN_TB_K +
                   this->access_ * Base::AccessType::kElements <
               group_channels_ &&
           Base::valid();
  }

 private:
  int channel_;         // the thread's first channel in the tile, within the group
  int step_;            // reduction tiles done
  int taps_;            // R * S
  int group_channels_;  // C / groups
};
#endif

#if defined(KILN_FIXED_CHANNELS) || defined(KILN_GROUPED)
#if !defined(KILN_GROUP_MODE)
#define KILN_GROUP_MODE cutlass::conv::GroupMode::kNone
#endif
// The default kernel with the activation iterator above in its main loop.
using KilnDefaultMma = typename KilnDefaultKernel::Mma;
using KilnConvKernel = cutlass::conv::kernel::ImplicitGemmConvolution<
    cutlass::conv::threadblock::ImplicitGemmMultistage<
        typename KilnDefaultMma::Shape,
        KilnActivationIterator<typename KilnDefaultMma::IteratorA>,
        typename KilnDefaultMma::SmemIteratorA, KilnDefaultMma::kCacheOpA,
        typename KilnDefaultMma::IteratorB, typename KilnDefaultMma::SmemIteratorB,
        KilnDefaultMma::kCacheOpB, typename KilnDefaultMma::Policy, KILN_STAGES>,
    typename KilnDefaultKernel::Epilogue, typename KilnDefaultKernel::ThreadblockSwizzle,
    cutlass::conv::Operator::kFprop, cutlass::conv::Conv2dProblemSize, KILN_GROUP_MODE>;
#else
using KilnConvKernel = KilnDefaultKernel;
#endif

using KilnParams = KilnConvKernel::Params;

#if (defined(KILN_FIXED_CHANNELS) + defined(KILN_NCHW) + defined(KILN_GROUPED) + \
     defined(KILN_3D)) > 1 && !(defined(KILN_NCHW) && !defined(KILN_GROUPED) && \
                               (defined(KILN_FIXED_CHANNELS) + defined(KILN_3D)) == 1)
#error "KILN_FIXED_CHANNELS, KILN_NCHW, KILN_GROUPED and KILN_3D are separate variants (but for NCHW with FIXED_CHANNELS or 3D)"
#endif

// Pixels of x and y and filter positions of w, as the layout transforms count them (the same
// tokens as before for 2-D, so the 2-D objects are unchanged).
#if defined(KILN_3D)
#define KILN_X_PIXELS a.in_d * a.in_h * a.in_w
#define KILN_W_TAPS a.fil_d * a.fil_h * a.fil_w
#define KILN_Y_PIXELS a.out_d * a.out_h * a.out_w
#else
#define KILN_X_PIXELS a.in_h * a.in_w
#define KILN_W_TAPS a.fil_h * a.fil_w
#define KILN_Y_PIXELS a.out_h * a.out_w
#endif

#if defined(KILN_NCHW)
// Bytes of the NHWC x, KRSC w and NPQK y copies in the workspace.
static __device__ kiln_i64 kiln_x_bytes(const KilnConvArgs& a) {
  return kiln_round256((kiln_i64)a.n * a.c * KILN_X_PIXELS * (kiln_i64)sizeof(KilnElement));
}
static __device__ kiln_i64 kiln_w_bytes(const KilnConvArgs& a) {
  return kiln_round256((kiln_i64)a.k * a.c * KILN_W_TAPS * (kiln_i64)sizeof(KilnElement));
}
static __device__ kiln_i64 kiln_y_bytes(const KilnConvArgs& a) {
  return kiln_round256((kiln_i64)a.n * a.k * KILN_Y_PIXELS * (kiln_i64)sizeof(KilnElement));
}
#endif

#if defined(KILN_FIXED_CHANNELS)
static_assert(KILN_ALIGN == 4, "the fixed-channels variant pads C to 4 channels");
// Byte offsets of the padded x and w in the workspace (256-byte aligned).
static __device__ kiln_i64 kiln_padded_x_bytes(const KilnConvArgs& a) {
  return kiln_round256((kiln_i64)a.n * a.in_h * a.in_w * 4 * (kiln_i64)sizeof(KilnElement));
}
static __device__ kiln_i64 kiln_padded_w_bytes(const KilnConvArgs& a) {
  return kiln_round256((kiln_i64)a.k * a.fil_h * a.fil_w * 4 * (kiln_i64)sizeof(KilnElement));
}
#endif

#if defined(KILN_NCHW)
// Where the NPQK y sits in the workspace: after the copies of x and w.
static __device__ kiln_i64 kiln_nhwc_y_at(const KilnConvArgs& a) {
#if defined(KILN_FIXED_CHANNELS)
  return kiln_padded_x_bytes(a) + kiln_padded_w_bytes(a);
#else
  return kiln_x_bytes(a) + kiln_w_bytes(a);
#endif
}
#endif

#if defined(KILN_3D)
// x's and w's channels as the kernel reads them: C, or the padded copies' multiple of KILN_ALIGN.
static __device__ kiln_i32 kiln_padded_channels(const KilnConvArgs& a) {
  return (a.c + KILN_ALIGN - 1) / KILN_ALIGN * KILN_ALIGN;
}
static __device__ bool kiln_pads_channels(const KilnConvArgs& a) { return a.c % KILN_ALIGN != 0; }
// Pixels of x and filter positions of w.
static __device__ kiln_i64 kiln_x_pixels(const KilnConvArgs& a) {
  return (kiln_i64)a.n * a.in_d * a.in_h * a.in_w;
}
static __device__ kiln_i64 kiln_w_taps(const KilnConvArgs& a) {
  return (kiln_i64)a.k * a.fil_d * a.fil_h * a.fil_w;
}
// Bytes of the padded x copy in the workspace (w's follows it).
static __device__ kiln_i64 kiln_padded_x_bytes(const KilnConvArgs& a) {
  return kiln_round256(kiln_x_pixels(a) * kiln_padded_channels(a) * (kiln_i64)sizeof(KilnElement));
}
static __device__ kiln_i64 kiln_padded_w_bytes(const KilnConvArgs& a) {
  return kiln_round256(kiln_w_taps(a) * kiln_padded_channels(a) * (kiln_i64)sizeof(KilnElement));
}
#endif

extern "C" __global__ void kiln_cutlass_params(KilnConvArgs a, kiln_i32 split_k, KilnParams* out,
                                               KilnBuilderInfo* info) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
#if defined(KILN_3D)
  KilnProblemSize problem(a.n, a.in_d, a.in_h, a.in_w, kiln_padded_channels(a), a.k, a.fil_d,
                          a.fil_h, a.fil_w, a.out_d, a.out_h, a.out_w, a.pad_d, a.pad_h,
                          a.pad_w, a.stride_d, a.stride_h, a.stride_w, a.dil_d, a.dil_h, a.dil_w,
                          cutlass::conv::Mode::kCrossCorrelation, split_k, a.groups);
#else
#if defined(KILN_FIXED_CHANNELS)
  const int channels = 4;  // the padded copies
#else
  const int channels = a.c;
#endif
  cutlass::conv::Conv2dProblemSize problem(
      a.n, a.in_h, a.in_w, channels, a.k, a.fil_h, a.fil_w, a.out_h, a.out_w, a.pad_h, a.pad_w,
      a.stride_h, a.stride_w, a.dil_h, a.dil_w, cutlass::conv::Mode::kCrossCorrelation,
      split_k, a.groups);
#endif
  using Op = cutlass::conv::Operator;
  cutlass::Status status = KilnConvKernel::Mma::IteratorA::can_implement(problem);
  if (status == cutlass::Status::kSuccess)
    status = KilnConvKernel::Mma::IteratorB::can_implement(problem);
#if defined(KILN_GROUPED)
  // CUTLASS's own group checks (its host-side can_implement, which NVRTC cannot compile).
  if (status == cutlass::Status::kSuccess &&
      (a.groups < 2 || a.k % a.groups != 0 || a.c % a.groups != 0 || split_k != 1 ||
       a.k % KILN_ALIGN_OUT != 0 ||
       (a.k / a.groups) % KILN_TB_N != 0))
    status = cutlass::Status::kErrorInvalidProblem;
#else
  if (status == cutlass::Status::kSuccess && (a.k % KILN_ALIGN_OUT != 0 || a.groups != 1))
    status = cutlass::Status::kErrorInvalidProblem;
#endif
#if defined(KILN_FIXED_CHANNELS)
  if (a.c > 4) status = cutlass::Status::kErrorInvalidProblem;
#endif
  typename KilnConvKernel::TensorRefA ref_a(
      nullptr, KilnTensorLayout::packed(
                   cutlass::conv::implicit_gemm_tensor_a_extent(Op::kFprop, problem)));
  typename KilnConvKernel::TensorRefB ref_b(
      nullptr, KilnTensorLayout::packed(
                   cutlass::conv::implicit_gemm_tensor_b_extent(Op::kFprop, problem)));
  typename KilnConvKernel::TensorRefC ref_c(
      nullptr, KilnTensorLayout::packed(
                   cutlass::conv::implicit_gemm_tensor_c_extent(Op::kFprop, problem)));
  typename KilnConvKernel::Arguments args(problem, ref_a, ref_b, ref_c, ref_c,
                                          typename KilnEpilogue::Params(1.0f, 0.0f),
                                          cutlass::conv::SplitKMode::kSerial);
  *out = KilnParams(args, nullptr);
  cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1> swizzle;
  dim3 grid = swizzle.get_grid_shape(out->grid_tiled_shape);
  kiln_report_launch<KilnConvKernel, KilnParams>(info, (kiln_i32)status, grid);
  info->offset_a = kiln_offset(out, &out->ptr_A);
  info->offset_b = kiln_offset(out, &out->ptr_B);
  info->offset_c = kiln_offset(out, &out->ptr_C);
  info->offset_d = kiln_offset(out, &out->ptr_D);
  info->offset_semaphore = kiln_offset(out, &out->semaphore);
  info->semaphore_ints =
      split_k > 1 ? out->grid_tiled_shape.m() * out->grid_tiled_shape.n() : 0;
#if defined(KILN_FIXED_CHANNELS) && defined(KILN_NCHW)
  info->a_in_workspace = 0;
  info->b_in_workspace = (kiln_i32)kiln_padded_x_bytes(a);
  info->y_in_workspace = (kiln_i32)kiln_nhwc_y_at(a);
  info->semaphore_in_workspace = (kiln_i32)(kiln_nhwc_y_at(a) + kiln_y_bytes(a));
#elif defined(KILN_FIXED_CHANNELS)
  info->a_in_workspace = 0;
  info->b_in_workspace = (kiln_i32)kiln_padded_x_bytes(a);
  info->semaphore_in_workspace = (kiln_i32)(kiln_padded_x_bytes(a) + kiln_padded_w_bytes(a));
  info->y_in_workspace = -1;
#elif defined(KILN_3D) && defined(KILN_NCHW)
  if (kiln_pads_channels(a)) status = cutlass::Status::kErrorInvalidProblem;
  info->status = (kiln_i32)status;
  info->a_in_workspace = 0;
  info->b_in_workspace = KILN_W_TAPS == 1 ? -1 : (kiln_i32)kiln_x_bytes(a);
  info->y_in_workspace = (kiln_i32)kiln_nhwc_y_at(a);
  info->semaphore_in_workspace = (kiln_i32)(kiln_nhwc_y_at(a) + kiln_y_bytes(a));
#elif defined(KILN_3D)
  const bool padded = kiln_pads_channels(a);
  info->a_in_workspace = padded ? 0 : -1;
  info->b_in_workspace = padded ? (kiln_i32)kiln_padded_x_bytes(a) : -1;
  info->semaphore_in_workspace =
      padded ? (kiln_i32)(kiln_padded_x_bytes(a) + kiln_padded_w_bytes(a)) : 0;
  info->y_in_workspace = -1;
#elif defined(KILN_NCHW)
  info->a_in_workspace = 0;
  // A 1x1 filter's (K, C, 1, 1) is (K, 1, 1, C): read in place, not copied.
  info->b_in_workspace = KILN_W_TAPS == 1 ? -1 : (kiln_i32)kiln_x_bytes(a);
  info->y_in_workspace = (kiln_i32)(kiln_x_bytes(a) + kiln_w_bytes(a));
  info->semaphore_in_workspace = (kiln_i32)(kiln_x_bytes(a) + kiln_w_bytes(a) + kiln_y_bytes(a));
#else
  info->a_in_workspace = -1;
  info->b_in_workspace = -1;
  info->y_in_workspace = -1;
  info->semaphore_in_workspace = 0;
#endif
}

extern "C" __global__ void __launch_bounds__(KilnConvKernel::kThreadCount)
    kiln_cutlass_fprop(__grid_constant__ const KilnParams params, KilnPointers, KilnConvArgs) {
  extern __shared__ __align__(16) unsigned char kiln_smem[];
  KilnConvKernel op;
  op(params, *reinterpret_cast<typename KilnConvKernel::SharedStorage*>(kiln_smem));
}

#if defined(KILN_FIXED_CHANNELS)
// x (N,H,W,C) and w (K,R,S,C), C <= 4, into the workspace as (.., 4) with zeros after C: one
// thread per pixel or filter position, grid-strided. With KILN_NCHW, x is (N,C,H,W) and w
// (K,C,R,S): a pixel's channels lie a plane apart.
extern "C" __global__ void kiln_cutlass_pad_channels(__grid_constant__ const KilnParams,
                                                     KilnPointers p, KilnConvArgs a) {
  const kiln_i64 pixels = (kiln_i64)a.n * a.in_h * a.in_w;
  const kiln_i64 taps = (kiln_i64)a.k * a.fil_h * a.fil_w;
  const KilnElement* x = static_cast<const KilnElement*>(p.x);
  const KilnElement* w = static_cast<const KilnElement*>(p.w);
  KilnElement* xp = reinterpret_cast<KilnElement*>(static_cast<char*>(p.workspace));
  KilnElement* wp =
      reinterpret_cast<KilnElement*>(static_cast<char*>(p.workspace) + kiln_padded_x_bytes(a));
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < pixels + taps;
       i += (kiln_i64)gridDim.x * blockDim.x) {
#if defined(KILN_NCHW)
    const kiln_i64 plane = i < pixels ? (kiln_i64)a.in_h * a.in_w : (kiln_i64)a.fil_h * a.fil_w;
    const kiln_i64 at = i < pixels ? i : i - pixels;
    const KilnElement* src = (i < pixels ? x : w) + at / plane * a.c * plane + at % plane;
    KilnElement* dst = i < pixels ? xp + i * 4 : wp + (i - pixels) * 4;
    cutlass::Array<KilnElement, 4> v;
    for (int c = 0; c < 4; ++c) v[c] = c < a.c ? src[c * plane] : KilnElement(0);
#else
    const KilnElement* src = i < pixels ? x + i * a.c : w + (i - pixels) * a.c;
    KilnElement* dst = i < pixels ? xp + i * 4 : wp + (i - pixels) * 4;
    cutlass::Array<KilnElement, 4> v;
    for (int c = 0; c < 4; ++c) v[c] = c < a.c ? src[c] : KilnElement(0);
#endif
    *reinterpret_cast<cutlass::Array<KilnElement, 4>*>(dst) = v;
  }
}
#endif

#if defined(KILN_3D)
// x (N,D,H,W,C) and w (K,T,R,S,C) into the workspace as (.., C') with C' the next multiple of
// KILN_ALIGN and zeros after C: one thread per element of the copies, grid-strided, so that
// reads and writes are both coalesced. Launched only where C is not a multiple of KILN_ALIGN.
extern "C" __global__ void kiln_cutlass_pad_channels(__grid_constant__ const KilnParams,
                                                     KilnPointers p, KilnConvArgs a) {
  const kiln_i64 padded = kiln_padded_channels(a);
  const kiln_i64 x_elements = kiln_x_pixels(a) * padded;
  const kiln_i64 all = x_elements + kiln_w_taps(a) * padded;
  const KilnElement* x = static_cast<const KilnElement*>(p.x);
  const KilnElement* w = static_cast<const KilnElement*>(p.w);
  KilnElement* xp = reinterpret_cast<KilnElement*>(static_cast<char*>(p.workspace));
  KilnElement* wp =
      reinterpret_cast<KilnElement*>(static_cast<char*>(p.workspace) + kiln_padded_x_bytes(a));
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < all;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    const bool in_x = i < x_elements;
    const kiln_i64 e = in_x ? i : i - x_elements;
    const kiln_i64 position = e / padded, channel = e % padded;
    const KilnElement* src = in_x ? x : w;
    const KilnElement v = channel < a.c ? src[position * a.c + channel] : KilnElement(0);
    (in_x ? xp : wp)[e] = v;
  }
}
#endif

#if defined(KILN_NCHW)
// One 32x32 tile of a batch of row-major rows x cols matrices, transposed: dst[b][c][r] =
// src[b][r][c], through shared memory so that both the reads and the writes are coalesced.
// Block (32, 8); `tile` counts tiles over the batch, row tiles, then column tiles.
static __device__ void kiln_transpose_tile(const KilnElement* src, KilnElement* dst,
                                           kiln_i32 rows, kiln_i32 cols, kiln_i64 tile) {
  __shared__ KilnElement staged[32][33];  // 33: a column read does not hit one bank
  const kiln_i64 row_tiles = (rows + 31) / 32, col_tiles = (cols + 31) / 32;
  const kiln_i64 b = tile / (row_tiles * col_tiles);
  const kiln_i64 rest = tile % (row_tiles * col_tiles);
  const kiln_i32 r0 = (kiln_i32)(rest / col_tiles) * 32, c0 = (kiln_i32)(rest % col_tiles) * 32;
  const kiln_i64 matrix = b * rows * (kiln_i64)cols;
  for (int i = threadIdx.y; i < 32; i += 8) {
    const kiln_i32 r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) staged[i][threadIdx.x] = src[matrix + (kiln_i64)r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8) {
    const kiln_i32 c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[matrix + (kiln_i64)c * rows + r] = staged[threadIdx.x][i];
  }
  __syncthreads();
}

static __device__ kiln_i64 kiln_tiles(kiln_i64 batches, kiln_i32 rows, kiln_i32 cols) {
  return batches * ((rows + 31) / 32) * ((cols + 31) / 32);
}

// x (N, C, H*W) -> (N, H*W, C) and w (K, C, R*S) -> (K, R*S, C) into the workspace: one
// grid-strided pass over the tiles of both.
extern "C" __global__ void __launch_bounds__(256)
    kiln_cutlass_nchw_in(__grid_constant__ const KilnParams, KilnPointers p, KilnConvArgs a) {
  const kiln_i32 pixels = KILN_X_PIXELS, taps = KILN_W_TAPS;
  const kiln_i64 x_tiles = kiln_tiles(a.n, a.c, pixels);
  // A 1x1 filter is read in place (the builder points the kernel at the caller's w).
  const kiln_i64 all = x_tiles + (taps == 1 ? 0 : kiln_tiles(a.k, a.c, taps));
  char* ws = static_cast<char*>(p.workspace);
  for (kiln_i64 t = blockIdx.x; t < all; t += gridDim.x) {
    if (t < x_tiles)
      kiln_transpose_tile(static_cast<const KilnElement*>(p.x),
                          reinterpret_cast<KilnElement*>(ws), a.c, pixels, t);
    else
      kiln_transpose_tile(static_cast<const KilnElement*>(p.w),
                          reinterpret_cast<KilnElement*>(ws + kiln_x_bytes(a)), a.c, taps,
                          t - x_tiles);
  }
}

// y (N, P*Q, K) in the workspace -> the caller's (N, K, P*Q).
extern "C" __global__ void __launch_bounds__(256)
    kiln_cutlass_nchw_out(__grid_constant__ const KilnParams, KilnPointers p, KilnConvArgs a) {
  const kiln_i32 pixels = KILN_Y_PIXELS;
  const kiln_i64 all = kiln_tiles(a.n, pixels, a.k);
  const char* ws = static_cast<const char*>(p.workspace);
  for (kiln_i64 t = blockIdx.x; t < all; t += gridDim.x)
    kiln_transpose_tile(reinterpret_cast<const KilnElement*>(ws + kiln_nhwc_y_at(a)),
                        static_cast<KilnElement*>(p.y), pixels, a.k, t);
}
#endif
