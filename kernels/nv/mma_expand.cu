// mma_expand.cu: ConvMmaExpand1x1Fwd, tensor-core 1x1 convolution in NHWC FP16 / BF16 for
// layers with few input channels and many output channels (C <= 64: the expansion layers of
// MobileNetV2's and EfficientNet's inverted residuals, 16 -> 96, 24 -> 144, 32 -> 192), NVIDIA
// sm_80+ (mma.sync, cp.async).
//
// Why its own kernel: such a layer reads C channels a pixel and writes 4-6 times as many, so its
// time is the output's writes. The wgmma GEMM kernels stage one output tile per warpgroup and
// spend a full reduction pipeline on one or two k16 steps: on the H200 they wrote 24 -> 144 at
// 56x56 (N=32) at about a third of the memory bandwidth. Here a block is one short step: it
// copies its BM pixels' channels and KN filter rows into shared memory (cp.async), takes the
// products with mma.sync m16n8k16 (FP32 sums, A and B fragments read as 32-bit words from rows
// padded by 16 bytes, so the eight rows of a fragment fall in distinct banks), parks the FP32
// sums in shared memory (over the inputs where a block takes one tile), and then applies the
// epilogue in the output's own order: each thread takes 8 consecutive channels of a pixel, loads
// the residual as one 16-byte vector and stores 16 bytes, so a warp writes whole 128-byte lines.
// The activation's case is chosen once per vector (kiln_act_each): applied per element, the
// epilogue's branches on scale, bias, residual and activation form took 44 instructions an
// output and the kernel lost to the wgmma kernels on every layer. Many small blocks an SM keep
// the writes in flight.
//
// Perf config: KILN_BM (pixels a block, 64 or 128), KILN_KN (output channels a block, a multiple
// of 8, such as 72 or 96 that K = 144 or 96 fills), KILN_CP (C rounded up to 16, 32 or 64: the
// k16 steps), and a run-time value, blocks an SM (0: a block a pixel tile). Launch: grid (pixel
// tiles, or fewer blocks that each take tile after tile, ceil(K / KN)), block 128 (four warps,
// each BM / 4 pixels by all KN channels); dynamic shared memory as src/solvers/expand.rs computes
// it. Needs groups = 1, a 1x1 filter at stride 1 without padding, C % 8 == 0 and C <= KILN_CP,
// channels_last, 2-D.
#include "epilogue.h"
#include "nv_shared.h"

#if !defined(KILN_BM) || !defined(KILN_KN) || !defined(KILN_CP)
#error "the perf config defines KILN_BM, KILN_KN and KILN_CP"
#endif
#if !defined(KILN_DTYPE_FP16) && !defined(KILN_DTYPE_BF16)
  #error "mma_expand.cu builds for FP16 or BF16"
#endif

#define KILN_THREADS 128
#define KILN_GPW (KILN_BM / 64)                 // m16 groups a warp (BM / 4 pixels)
#define KILN_NT (KILN_KN / 8)                   // n8 tiles a warp
#define KILN_GRANULES (KILN_CP / 8)             // 16-byte granules of a staged row
#define KILN_ROW_BYTES (KILN_CP * 2 + 16)       // a staged row, padded (bank spread)
#define KILN_SUM_STRIDE (KILN_KN + 8)           // FP32 sums per parked row (bank spread)
#define KILN_OUT_GRANULES (KILN_KN / 8)         // 8-channel output vectors of a pixel
#define KILN_FACTOR_BYTES (KILN_KN * 8)         // alpha * scale and bias, FP32, per channel
static_assert(KILN_BM == 64 || KILN_BM == 128, "BM is 64 or 128");
static_assert(KILN_KN % 8 == 0, "KN is whole n8 tiles");
static_assert(KILN_CP == 16 || KILN_CP == 32 || KILN_CP == 64, "CP is 16, 32 or 64");
static_assert(KILN_OUT_GRANULES <= KILN_THREADS, "a thread stores one vector of a pixel");
// The epilogue's pixels a pass: where the output vectors do not divide the block (KN = 72 or
// 96: 9 or 12 of them), the last threads store nothing, rather than a block tile fitting K
// leaving whole n8 tiles idle (K = 96 on KN = 64 tiles wastes half of its second block).
#define KILN_ROWS_PER_PASS (KILN_THREADS / KILN_OUT_GRANULES)

// ROWS rows of C channels from src (row r at src + r * C) into shared memory at dst, padded rows,
// with cp.async; zero past C and past valid_rows. A thread copies one granule column of every
// (THREADS / GRANULES)-th row: the trip count is a constant and the 64-bit address arithmetic
// is done once (as a strided loop over 64-bit indices it took about 120 instructions a tile).
template <int ROWS>
static __device__ KILN_INLINE void kiln_mma_expand_copy_rows(const kiln_t* __restrict__ base,
                                                            const kiln_t* __restrict__ src,
                                                            kiln_u32 dst, kiln_i64 valid_rows,
                                                            kiln_i32 c_in, kiln_i32 tid) {
  constexpr kiln_i32 kStep = KILN_THREADS / KILN_GRANULES;
  const kiln_i32 row0 = tid / KILN_GRANULES, c = (tid % KILN_GRANULES) * 8;
  const kiln_i32 rows = valid_rows < ROWS ? (kiln_i32)valid_rows : ROWS;
  const kiln_t* const from = src + (kiln_i64)row0 * c_in + c;
  const kiln_u32 to = dst + (kiln_u32)(row0 * KILN_ROW_BYTES + c * 2);
#pragma unroll
  for (kiln_i32 j = 0; j < (ROWS + kStep - 1) / kStep; ++j) {
    if (ROWS % kStep != 0 && row0 + j * kStep >= ROWS) break;
    const bool valid = row0 + j * kStep < rows && c < c_in;
    // An invalid granule reads nothing (zero fill) but still names a mapped address.
    kiln_cp16(to + (kiln_u32)(j * kStep * KILN_ROW_BYTES), valid ? from + j * kStep * c_in : base,
              valid);
  }
}

// A tile's pixels from p0 on, as one cp.async commit group.
static __device__ KILN_INLINE void kiln_mma_expand_copy_pixels(const kiln_t* __restrict__ x,
                                                              kiln_u32 xs, kiln_i64 p0,
                                                              kiln_i64 pixels, kiln_i32 c_in,
                                                              kiln_i32 tid) {
  kiln_mma_expand_copy_rows<KILN_BM>(x, x + p0 * c_in, xs, pixels - p0, c_in, tid);
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Four blocks an SM: at most 128 registers, which every config fits without a stack frame (with
// five, ptxas spilled to one; with the default bounds it held some objects to 56-64 registers
// and spilled predicates).
extern "C" __global__ void __launch_bounds__(KILN_THREADS, 4)
    kiln_mma_expand(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                    kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue ep) {
  extern __shared__ __align__(128) unsigned char kiln_dyn_smem[];
  kiln_pdl_wait();
  const kiln_i64 pixels = (kiln_i64)a.n * a.out_h * a.out_w;
  const kiln_i64 tiles = (pixels + KILN_BM - 1) / KILN_BM;
  const kiln_i32 k0 = (kiln_i32)blockIdx.y * KILN_KN;
  const kiln_i32 tid = (kiln_i32)threadIdx.x;
  // Where the grid holds fewer blocks than pixel tiles, a block takes tile after tile, its
  // filter rows, scale and bias loaded once, and copies the next tile's pixels while it stores
  // this one's outputs: then the sums have their own space after the inputs, not over them
  // (src/solvers/expand.rs sizes both layouts).
  const bool loops = (kiln_i64)gridDim.x < tiles;
  // Shared memory: alpha * scale and bias of the block's channels; the filter rows; the pixels;
  // the sums, over the filter rows and pixels unless the block loops.
  float* const factors = reinterpret_cast<float*>(kiln_dyn_smem);
  const kiln_u32 ws = kiln_smem(kiln_dyn_smem) + KILN_FACTOR_BYTES;
  const kiln_u32 xs = ws + KILN_KN * KILN_ROW_BYTES;
  float* const sums = reinterpret_cast<float*>(
      kiln_dyn_smem + KILN_FACTOR_BYTES + (loops ? (KILN_KN + KILN_BM) * KILN_ROW_BYTES : 0));

  // The block's filter rows and first pixels, zero past C, the last pixel and K.
  kiln_mma_expand_copy_rows<KILN_KN>(w, w + (kiln_i64)k0 * a.c, ws, a.k - k0, a.c, tid);
  kiln_i64 tile = blockIdx.x;
  kiln_mma_expand_copy_pixels(x, xs, tile * KILN_BM, pixels, a.c, tid);
  // alpha * scale and bias, applied as one fused multiply-add (rounded once, where epilogue.h
  // rounds after each). Channels past K read channel K - 1's and are not stored.
  for (kiln_i32 i = tid; i < KILN_KN; i += KILN_THREADS) {
    const kiln_i32 kj = k0 + i < a.k ? k0 + i : a.k - 1;
    factors[i] = ep.alpha * (ep.scale ? kiln_ep_f32(ep.scale, kj) : 1.0f);
    factors[KILN_KN + i] = ep.bias ? kiln_ep_f32(ep.bias, kj) : 0.0f;
  }
  // This thread's 8 output channels (none: a thread past the passes' vectors).
  const kiln_i32 g = tid % KILN_OUT_GRANULES;
  const kiln_i32 k = tid < KILN_ROWS_PER_PASS * KILN_OUT_GRANULES ? k0 + g * 8 : a.k;
  const kiln_i32 channels = a.k - k < 8 ? a.k - k : 8;
  const KilnAct act = kiln_act_params(ep.act, ep.act_a);
  // Whole 16-byte vectors where the 8 channels exist and y (and z) hold them aligned.
  const bool vectors = channels == 8 && (((kiln_u64)y | ep.z) & 15u) == 0 &&
                       ((ep.y_ld | ep.z_ld) & 7) == 0;

  // Fragment rows: lane / 4 (and + 8), k pair (lane % 4) * 2 (and + 8).
  const kiln_i32 lane = tid & 31, warp = tid >> 5;
  const kiln_i32 fr = lane >> 2, fk = (lane & 3) * 2;
  for (bool first = true; tile < tiles; first = false) {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    // The pixels (and filter rows) have landed, and the last tile's sums have been read.
    __syncthreads();
    if (first) kiln_pdl_release();
    float acc[KILN_GPW][KILN_NT][4];
#pragma unroll
    for (int q = 0; q < KILN_GPW; ++q)
#pragma unroll
      for (int t = 0; t < KILN_NT; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][t][e] = 0.0f;
#pragma unroll
    for (int s = 0; s < KILN_CP / 16; ++s) {
      const kiln_u32 kb = (kiln_u32)((s * 16 + fk) * 2);
      kiln_u32 af[KILN_GPW][4];
#pragma unroll
      for (int q = 0; q < KILN_GPW; ++q) {
        const kiln_u32 r0 =
            xs + (kiln_u32)((warp * KILN_GPW * 16 + q * 16 + fr) * KILN_ROW_BYTES) + kb;
        asm volatile("ld.shared.b32 %0, [%1];" : "=r"(af[q][0]) : "r"(r0));
        asm volatile("ld.shared.b32 %0, [%1];" : "=r"(af[q][1]) : "r"(r0 + 8 * KILN_ROW_BYTES));
        asm volatile("ld.shared.b32 %0, [%1];" : "=r"(af[q][2]) : "r"(r0 + 16));
        asm volatile("ld.shared.b32 %0, [%1];"
                     : "=r"(af[q][3])
                     : "r"(r0 + 8 * KILN_ROW_BYTES + 16));
      }
#pragma unroll
      for (int t = 0; t < KILN_NT; ++t) {
        const kiln_u32 b0 = ws + (kiln_u32)((t * 8 + fr) * KILN_ROW_BYTES) + kb;
        kiln_u32 bf0, bf1;
        asm volatile("ld.shared.b32 %0, [%1];" : "=r"(bf0) : "r"(b0));
        asm volatile("ld.shared.b32 %0, [%1];" : "=r"(bf1) : "r"(b0 + 16));
#pragma unroll
        for (int q = 0; q < KILN_GPW; ++q)
          kiln_mma16(acc[q][t], af[q][0], af[q][1], af[q][2], af[q][3], bf0, bf1);
      }
    }

    // Every warp has read its pixels: the next tile's may overwrite them (a looping block), or
    // the sums may (one tile a block).
    __syncthreads();
    const kiln_i64 p0 = tile * KILN_BM;
    tile += gridDim.x;
    if (tile < tiles) kiln_mma_expand_copy_pixels(x, xs, tile * KILN_BM, pixels, a.c, tid);
    // Park the sums, [pixel][channel] FP32.
#pragma unroll
    for (int q = 0; q < KILN_GPW; ++q) {
      const kiln_i32 row = warp * KILN_GPW * 16 + q * 16 + fr;
#pragma unroll
      for (int t = 0; t < KILN_NT; ++t) {
        const kiln_i32 col = t * 8 + fk;
        *reinterpret_cast<float2*>(sums + row * KILN_SUM_STRIDE + col) =
            make_float2(acc[q][t][0], acc[q][t][1]);
        *reinterpret_cast<float2*>(sums + (row + 8) * KILN_SUM_STRIDE + col) =
            make_float2(acc[q][t][2], acc[q][t][3]);
      }
    }
    __syncthreads();

    // The epilogue in the output's order: this thread's 8 channels of every pixel it stores,
    // the residual and the activation's case chosen once per pixel.
    if (k >= a.k) continue;
    float scale[8], bias[8];
#pragma unroll
    for (int j = 0; j < 8; j += 4) {
      *reinterpret_cast<float4*>(scale + j) =
          *reinterpret_cast<const float4*>(factors + g * 8 + j);
      *reinterpret_cast<float4*>(bias + j) =
          *reinterpret_cast<const float4*>(factors + KILN_KN + g * 8 + j);
    }
    for (kiln_i32 row = tid / KILN_OUT_GRANULES; row < KILN_BM; row += KILN_ROWS_PER_PASS) {
      const kiln_i64 p = p0 + row;
      if (p >= pixels) break;
      const float4 lo = *reinterpret_cast<const float4*>(sums + row * KILN_SUM_STRIDE + g * 8);
      const float4 hi =
          *reinterpret_cast<const float4*>(sums + row * KILN_SUM_STRIDE + g * 8 + 4);
      const float s[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      if (!vectors) {
        for (kiln_i32 j = 0; j < channels; ++j) kiln_store_nhwc_each(y, p, k + j, s[j], ep);
        continue;
      }
      float r[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) r[j] = fmaf(s[j], scale[j], bias[j]);
      if (ep.z) {
        const uint4 zv =
            __ldg(reinterpret_cast<const uint4*>((const kiln_t*)ep.z + p * ep.z_ld + k));
        const kiln_u32 zw[4] = {zv.x, zv.y, zv.z, zv.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const kiln_t lo16 = (kiln_t)(zw[j] & 0xffffu), hi16 = (kiln_t)(zw[j] >> 16);
          r[2 * j] += ep.beta * kiln_load(&lo16, 0);
          r[2 * j + 1] += ep.beta * kiln_load(&hi16, 0);
        }
      }
      if (ep.act != KILN_ACT_IDENTITY) kiln_act_each(r, act);
      *reinterpret_cast<uint4*>(y + p * ep.y_ld + k) =
          make_uint4(kiln_pack_pair(r[0], r[1]), kiln_pack_pair(r[2], r[3]),
                     kiln_pack_pair(r[4], r[5]), kiln_pack_pair(r[6], r[7]));
    }
  }
}
