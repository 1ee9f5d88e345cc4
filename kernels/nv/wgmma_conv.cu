// wgmma_conv.cu: kiln's own Hopper (sm_90a) tensor-core convolution, NHWC FP16 / BF16, and FP32
// data multiplied as TF32 (the opt-in math mode).
//
// A convolution is the GEMM y[M = N*P*Q, K] = A[M, R*S*C] * w[K, R*S*C]^T, where row m of A is
// the R x S x C input window of output pixel m. Both operands are C-contiguous ("K-major" in GEMM
// terms), which is what wgmma reads from shared memory without a transpose. Two entries:
//  * kiln_wgmma_gemm1x1 (1x1 filter, stride 1, no padding): A is x itself, read through a 2-D
//    tensor map;
//  * kiln_wgmma_implicit_gemm (built with -DKILN_IM2COL; any 2-D filter, stride <= 8, padding,
//    dilation): A is never formed: TMA's im2col mode gathers, for filter tap (r, s) and 128
//    bytes of channels (64 FP16/BF16, 32 FP32), the input pixels of KILN_BM consecutive output pixels (across rows and images),
//    zero-filling the padding; w is read through a 3-D map [K, R*S, C] so channels past C
//    read as zeros, not the next tap's weights. With -DKILN_3D the same over NDHWC tensors:
//    a 5-D im2col map gathers for tap (t, r, s) across rows, planes and images, and w is
//    [K, T*R*S, C].
// A block computes a KILN_BM x KILN_BN tile of y (the *_persistent entries: tile after tile, at
// most one block per SM; with split-K a work unit is one slice of a tile's reduction, whose FP32
// partial sums go to the workspace for kiln_wgmma_splitk_reduce to add into y; small-M, deep
// layers at batch 1 fill the GPU so):
//  * one producer warp (the last warpgroup) streams KILN_BM x KILN_BK tiles of x and KILN_BN x
//    KILN_BK tiles of w (KILN_BK: 128 bytes of the reduction) into a ring of KILN_STAGES shared-memory stages with TMA (the tensor maps are
//    encoded on the host, by kiln, through the driver), each stage guarded by a "full" and an
//    "empty" mbarrier; TMA zero-fills rows and channels past the tensor's edge, so partial tiles
//    need no masking in the main loop;
//  * KILN_BM / 64 consumer warpgroups each multiply 64 rows with wgmma (m64nNk16, TF32 m64nNk8;
//    FP32 accumulators in registers), keeping one wgmma group in flight while the next stage lands;
//  * the epilogue converts to FP16 / BF16 (round to nearest even, hardware cvt; FP32 as is), stages the tile
//    in shared memory and writes it with 16-byte coalesced stores, masking rows and channels past
//    the edge.
// The 128-byte swizzle of the TMA loads is the layout wgmma's shared-memory descriptors name
// (mode 1): rows of 128 B, 8-row atoms 1024 B apart; with -DKILN_STEP_CHANNELS (inputs of few
// channels) rows of 64 or 32 B and the matching swizzle (modes 2, 3).
// With -DKILN_SWAP (layers of at most 64 output channels) the products are taken transposed:
// one consumer warpgroup per 64 output channels, its wgmma spanning all KILN_BM pixels.
// With -DKILN_GROUPED as well, grouped convolution with the groups folded into those
// 64-channel tiles (see below).
#include "epilogue.h"
#include "nv_shared.h"

#ifndef KILN_BM
#define KILN_BM 128
#endif
#ifndef KILN_BN
#define KILN_BN 128
#endif
#ifndef KILN_STAGES
#define KILN_STAGES 4
#endif
// KILN_SWAP (im2col, FP16/BF16): the products taken transposed, y^T = w A^T, so that a
// warpgroup's wgmma spans all KILN_BM output pixels (N = KILN_BM, up to 256) for 64 output
// channels: one consumer warpgroup per 64 channels. A 64-channel layer then runs m64n256
// products, which read less shared memory per multiply-add than the four m64n64 products of
// four warpgroups (each reading the same w slice).
#if defined(KILN_SWAP)
#define KILN_CONSUMERS (KILN_BN / 64)
#define KILN_ACCN (KILN_BM / 2)
#else
#define KILN_CONSUMERS (KILN_BM / 64)
#define KILN_ACCN (KILN_BN / 2)
#endif
#define KILN_THREADS ((KILN_CONSUMERS + 1) * 128)
// wgmma's N per instruction: the block's N up to 256.
#define KILN_WN (KILN_BN > 256 ? 256 : KILN_BN)

// Per element type: its size, wgmma's operand types, its K per instruction (32 bytes of each
// row either way) and the instruction's trailing immediates (scale A, scale B and, for 16-bit
// types only, the transpose flags).
#if defined(KILN_DTYPE_FP16)
  #define KILN_ELEM_BYTES 2
  #define KILN_WGMMA_AB "k16.f32.f16.f16"
  #define KILN_WGMMA_IMM "1, 1, 0, 0"
  #define KILN_CVT_PAIR "cvt.rn.f16x2.f32 %0, %1, %2;"
#elif defined(KILN_DTYPE_BF16)
  #define KILN_ELEM_BYTES 2
  #define KILN_WGMMA_AB "k16.f32.bf16.bf16"
  #define KILN_WGMMA_IMM "1, 1, 0, 0"
  #define KILN_CVT_PAIR "cvt.rn.bf16x2.f32 %0, %1, %2;"
#elif defined(KILN_DTYPE_FP32)
  // FP32 data multiplied as TF32 (the top 19 bits of each operand; FP32 accumulation and
  // output): only solvers whose manifest entry says math = "tf32" build this.
  #define KILN_ELEM_BYTES 4
  #define KILN_WGMMA_AB "k8.f32.tf32.tf32"
  #define KILN_WGMMA_IMM "1, 1"
#else
  #error "wgmma_conv.cu builds for FP16, BF16 or FP32 (TF32 math)"
#endif
// Bytes of the reduction per stage and row: one swizzle row of 128 bytes, or, for inputs with
// few channels, of 64 or 32
// bytes (-DKILN_STEP_CHANNELS=32 or 16 FP16/BF16 channels), so that a 16-channel tap is not
// padded to 64 channels.
#if defined(KILN_STEP_CHANNELS)
  #define KILN_ROW_BYTES (KILN_STEP_CHANNELS * KILN_ELEM_BYTES)
#else
  #define KILN_ROW_BYTES 128
#endif
#if KILN_ROW_BYTES != 128 && KILN_ROW_BYTES != 64 && KILN_ROW_BYTES != 32
  #error "KILN_ROW_BYTES is 128, 64 or 32 (the wgmma swizzle widths)"
#endif
#if defined(KILN_3D) && !defined(KILN_IM2COL)
  #error "KILN_3D builds the im2col kernel (-DKILN_IM2COL)"
#endif
// Reduction elements per stage.
#define KILN_BK (KILN_ROW_BYTES / KILN_ELEM_BYTES)
// Elements of y per 16-byte store.
#define KILN_VEC (16 / KILN_ELEM_BYTES)
// The persistent kernel's TMA epilogue (see kiln_tma_epilogue_offset): tiles of whole 128-byte
// boxes of channels, stored whole (not the stream-K, transposed or first-layer kernels).
#if !defined(KILN_SWAP) && !defined(KILN_STREAM_K) && !defined(KILN_FIRST_LAYER) && \
    (KILN_BN * KILN_ELEM_BYTES) % 128 == 0
#define KILN_TMA_EPILOGUE 1
#else
#define KILN_TMA_EPILOGUE 0
#endif

// KILN_GROUPED: grouped convolution on the transposed 3-D kernel (2-D problems run one plane
// deep), the groups folded into the 64-channel tiles. The tile of output channels [n0, n0 + 64)
// reduces over the input channels of the groups it meets, from input channel (n0 / group_out) *
// group_in, group_tile_in of them (the host's count: the most any tile meets):
//  * groups of a multiple of 64 output channels: a tile lies within one group, and w is read
//    as it is, [K, taps, group_in];
//  * any other width: w is first packed into the workspace (kiln_wgmma_group_pack), [K, taps,
//    group_tile_in], each output channel's weights at its group's place among its tile's
//    input channels and zero elsewhere (block-diagonal where groups divide the tile). The
//    products spend group_tile_in / group_in times the groups' own multiply-adds (64 /
//    group_out where groups divide the tile), which tensor cores afford where the CUDA-core
//    and mma.sync kernels are bound by issue rate.
// The zeros multiply other groups' inputs: exact for finite values, but an inf or NaN there
// would poison outputs whose own sum excludes it. Such a product is NaN, so a tile with any NaN
// sum is computed again directly from x and w (kiln_group_direct).
#if defined(KILN_GROUPED) && (!defined(KILN_SWAP) || !defined(KILN_3D) || KILN_BN != 64 || KILN_ELEM_BYTES != 2)
#error "KILN_GROUPED builds the transposed 3-D kernel with 64-channel tiles, FP16 or BF16"
#endif

// CUtensorMap: 128 opaque bytes, 64-byte aligned, encoded by the host.
struct __align__(64) KilnTensorMap {
  kiln_u64 opaque[16];
};

// The kernel's one argument, built by kiln on the host (mirrored by `TmaConvParams` in
// src/solvers/wgmma.rs; the launch patches the tensor maps' and y's addresses per call).
struct __align__(64) KilnTmaConvParams {
  // 1x1: x as a [M, C] matrix, box [KILN_BK channels, KILN_BM rows]; im2col: x as
  // [N, H, W, C], KILN_BM pixels of KILN_BK channels per load. 128-byte swizzle.
  KilnTensorMap x;
  // 1x1: w as a [K, C] matrix, box [KILN_BK, KILN_BN]; im2col: w as [K, R*S, C], box
  // [KILN_BK, 1, KILN_BN].
  KilnTensorMap w;
  // y and z as [M, K] matrices (rows K elements apart), box [128 bytes of channels, 64 rows],
  // 128-byte swizzle: the persistent kernels' TMA epilogue (tma_epilogue), where it applies.
  KilnTensorMap y_map, z_map;
  kiln_u64 y;        // y, [M, K] (NHWC)
  kiln_i32 m, k, c;  // rows (output pixels), output channels, input channels
  kiln_i32 splits;   // split-K slices; > 1: FP32 partials in the workspace; 0: stream-K
  // The convolution's geometry (im2col only), and its depth (KILN_3D only).
  kiln_i32 out_h, out_w, filter_h, filter_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  kiln_i32 out_d, filter_d, stride_d, pad_d, dil_d;
  // Split-K: splits x [M, K] FP32 partial sums. Stream-K: KILN_SK_FLAGS_BYTES of flags (one
  // per block and consumer warpgroup, zeroed before each launch), then one KILN_BM x KILN_BN
  // FP32 partial tile per block.
  kiln_u64 workspace;
  // The first-layer kernels only (KILN_FIRST_LAYER): the caller's x and w, their packed copies
  // and the per-input-row non-finite flags in the workspace, the input's size, and the packed
  // filter row: its elements (a multiple of 16) and its leading zero taps.
  kiln_u64 x_data, w_data, x_packed, w_packed, row_flags;
  kiln_i32 in_h, in_w, row_elems, lead;
  // The grouped kernel only (KILN_GROUPED; in_h and in_w too): the input's depth, the input
  // and output channels of one group, and the input channels a 64-channel tile reduces over.
  kiln_i32 in_d, group_in, group_out, group_tile_in;
  // 1: y_map (and z_map, with a residual) point at this launch's y and z, whose rows are K
  // elements apart, and tensor copies move the persistent kernel's staging tile; 0: its threads
  // do (a channel slice of a wider tensor).
  kiln_i32 tma_epilogue, reserved;
  // The fused epilogue (epilogue.h); y's rows are ep.y_ld elements apart.
  KilnEpilogue ep;
};

// The block's dynamic shared memory.
static __device__ KILN_INLINE unsigned char* kiln_dyn_smem_base() {
  extern __shared__ __align__(16) unsigned char kiln_dyn_smem[];
  return kiln_dyn_smem;
}

// A generic pointer to shared-memory address `addr` of a block whose layout `l` puts the
// dynamic shared memory at `l.raw` (the layouts hold 32-bit shared addresses, which the
// tensor copies and barriers take; the threads' own loads and stores take pointers).
template <class Layout>
static __device__ KILN_INLINE unsigned char* kiln_smem_ptr(const Layout& l, kiln_u32 addr) {
  return kiln_dyn_smem_base() + (addr - l.raw);
}

// Row pitch of the staged output tile in 32-bit words: BN elements plus 16 bytes against bank
// conflicts, keeping rows 16-byte aligned.
#define KILN_PITCH (KILN_BN * KILN_ELEM_BYTES / 4 + 4)

// A consumer warpgroup's 64 rows of the output staging tile (of a layout that has one).
template <class Layout>
static __device__ KILN_INLINE kiln_u32* kiln_staging_tile(const Layout& l, int warpgroup) {
  return (kiln_u32*)kiln_smem_ptr(l, l.staging) + warpgroup * 64 * KILN_PITCH;
}

// Row r's 16-byte chunk ch of a warpgroup's staged tile: rows of KILN_PITCH words, or
// (kSwizzled) the TMA epilogue's boxes of 64 rows x 128 bytes, chunk c of a row at chunk
// c ^ (row % 8) (kiln_tma_epilogue_offset spells the same swizzle per accumulator pair).
template <bool kSwizzled>
static __device__ KILN_INLINE const kiln_u32* kiln_staged_chunk(const kiln_u32* tile, int r, int ch) {
  if (kSwizzled) {
    const int box = ch / 8, chunk = (ch % 8) ^ (r % 8);
    return (const kiln_u32*)((const unsigned char*)tile + box * (64 * 128) + r * 128 + chunk * 16);
  }
  return tile + r * KILN_PITCH + ch * 4;
}

// The fused epilogue reads the residual z from the warpgroup's staging tile, where y's rows
// are staged for the coalesced stores: row r's 32-bit words start at tile + r * KILN_PITCH
// (FP16 / BF16: one word per column pair; FP32: one per column). kiln_stage_z fills it with
// 16-byte copies that the warpgroup's threads issue together, so z is read coalesced and all
// at once; read straight from global memory in the accumulators' layout (scattered 4-byte
// pairs), it cost ResNet-50's 1x1 layers that end a bottleneck up to 3x their plain time
// (64 -> 256 channels at batch 32: 0.069 ms against 0.052 so, 0.022 plain). The persistent
// kernel issues a unit's copies when the unit starts, so that they land while its products
// run. z's rows are 16-byte aligned: the host checks z is, and z_ld and K are multiples of 8
// elements.
//
// Without a residual: nothing. Else rows [row0, row0 + 64) of z below rows_end, columns
// [n0, n0 + KILN_BN) below K, copied into the warpgroup's staging tile (the rest zero-filled;
// kSwizzled: the TMA epilogue's layout, kiln_staged_chunk): the copies are issued here and
// complete in kiln_stage_z_wait (the TMA epilogue waits on them itself).
template <bool kSwizzled = false>
static __device__ KILN_INLINE void kiln_stage_z_issue(const KilnTmaConvParams& p, const kiln_u32* tile,
                                                      kiln_i64 row0, kiln_i64 rows_end, int n0) {
  const KilnEpilogue& e = p.ep;
  if (!e.z) return;
  const unsigned char* z = (const unsigned char*)e.z;
  const int chunks = KILN_BN / KILN_VEC;
  for (int i = threadIdx.x % 128; i < 64 * chunks; i += 128) {
    const int r = i / chunks, col = n0 + (i % chunks) * KILN_VEC;
    const bool in = row0 + r < rows_end && col < p.k;
    const unsigned char* src = in ? z + ((row0 + r) * e.z_ld + col) * KILN_ELEM_BYTES : z;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(kiln_smem(kiln_staged_chunk<kSwizzled>(tile, r, i % chunks))),
                 "l"(src), "r"(in ? 16 : 0)
                 : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Without a residual: null. Else waits until the warpgroup's copies (kiln_stage_z_issue) have
// landed and are visible to all its threads (named barrier `barrier`), and returns this
// thread's row (thread_row) of the tile, for kiln_wgmma_epilogue.
static __device__ KILN_INLINE const kiln_u32* kiln_stage_z_wait(const KilnTmaConvParams& p, kiln_u32* tile,
                                                                int barrier, int thread_row) {
  if (!p.ep.z) return nullptr;
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  asm volatile("bar.sync %0, 128;" ::"r"(barrier) : "memory");
  return tile + thread_row * KILN_PITCH;
}

// Both at once, where the staging tile is not free earlier (the one-tile kernel stages y in its
// pipeline stages; the first-layer kernel's units are short).
static __device__ KILN_INLINE const kiln_u32* kiln_stage_z(const KilnTmaConvParams& p, kiln_u32* tile,
                                                           kiln_i64 row0, kiln_i64 rows_end, int n0,
                                                           int barrier, int thread_row) {
  kiln_stage_z_issue(p, tile, row0, rows_end, n0);
  return kiln_stage_z_wait(p, tile, barrier, thread_row);
}

// Stores a warpgroup's staged 64 x KILN_BN tile (rows from row0, below rows_end; columns from
// n0, below K) to y element by element, a warp's lanes on consecutive columns of a row so that
// the stores still coalesce: for output channel counts (45, 230, 255) or channel slices whose
// rows do not start 16 bytes apart. Out of line: inlined beside the 16-byte path, it made
// every wgmma launch of a whole network about 0.6 us slower (ResNet-50 at N=1: 0.364 -> 0.409
// ms), though no kernel ran that path; called, 0.2-1.2% on the four networks.
// swizzled: the tile is in the TMA epilogue's layout (kiln_staged_chunk), not padded rows.
static __device__ __noinline__ void kiln_store_staged_elements(const KilnTmaConvParams& p, const kiln_u32* tile,
                                                               int row0, int rows_end, int n0,
                                                               bool swizzled = false) {
  unsigned char* y = (unsigned char*)p.y;
  for (int i = threadIdx.x % 128; i < 64 * KILN_BN; i += 128) {
    const int r = i / KILN_BN, c = i % KILN_BN;
    const int row = row0 + r, col = n0 + c;
    if (row < rows_end && col < p.k) {
      const kiln_i64 at = (kiln_i64)row * p.ep.y_ld + col;
      const int byte = c * KILN_ELEM_BYTES;
      const kiln_u32* chunk = swizzled ? kiln_staged_chunk<true>(tile, r, byte / 16)
                                       : kiln_staged_chunk<false>(tile, r, byte / 16);
      const unsigned char* from = (const unsigned char*)chunk + byte % 16;
#if KILN_ELEM_BYTES == 2
      *(kiln_u16*)(y + at * 2) = *(const kiln_u16*)from;
#else
      *(kiln_u32*)(y + at * 4) = *(const kiln_u32*)from;
#endif
    }
  }
}

// Stores a warpgroup's staged 64 x KILN_BN tile to y: 16-byte stores where every chunk is whole
// and aligned (K and y's row stride in multiples of KILN_VEC elements), else
// kiln_store_staged_elements; no store reaches past K into a wider tensor's other channels.
template <bool kSwizzled = false>
static __device__ KILN_INLINE void kiln_store_staged(const KilnTmaConvParams& p, const kiln_u32* tile,
                                                     int row0, int rows_end, int n0) {
  if ((p.k | p.ep.y_ld) % KILN_VEC != 0) {
    kiln_store_staged_elements(p, tile, row0, rows_end, n0, kSwizzled);
    return;
  }
  // 16-byte chunks of KILN_VEC elements; the warpgroup's 128 threads walk its 64 rows.
  const int chunks = KILN_BN / KILN_VEC;
  unsigned char* y = (unsigned char*)p.y;
  for (int i = threadIdx.x % 128; i < 64 * chunks; i += 128) {
    const int r = i / chunks, ch = i % chunks;
    const int row = row0 + r, col = n0 + ch * KILN_VEC;
    if (row < rows_end && col < p.k) {
      *(uint4*)(y + ((kiln_i64)row * p.ep.y_ld + col) * KILN_ELEM_BYTES) =
          *(const uint4*)kiln_staged_chunk<kSwizzled>(tile, r, ch);
    }
  }
}

// The two elements of z a thread's accumulators acc[4j + 2h], acc[4j + 2h + 1] meet, from the
// staged tile (zt: the thread's first row), converted by the hardware.
#if KILN_ELEM_BYTES == 2
// Two 16-bit elements (the lower first) as floats, converted by the hardware.
static __device__ KILN_INLINE float2 kiln_unpack_pair(kiln_u32 bits) {
#if defined(KILN_DTYPE_FP16)
  float2 r;
  asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi; }"
      : "=f"(r.x), "=f"(r.y)
      : "r"(bits));
  return r;
#else
  return make_float2(kiln_bits_to_float(bits << 16), kiln_bits_to_float(bits & 0xffff0000u));
#endif
}
#endif

static __device__ KILN_INLINE float2 kiln_staged_z_pair(const kiln_u32* zt, int j, int h, int lane) {
#if KILN_ELEM_BYTES == 2
  return kiln_unpack_pair(zt[h * 8 * KILN_PITCH + 4 * j + lane % 4]);
#else
  return *(const float2*)((const float*)zt + h * 8 * KILN_PITCH + 8 * j + 2 * (lane % 4));
#endif
}

#if KILN_TMA_EPILOGUE
// The TMA epilogue's tile: a warpgroup's 64 rows x KILN_BN columns as KILN_BN * KILN_ELEM_BYTES /
// 128 boxes of 64 rows of 128 bytes (8 KiB each, 1 KiB aligned), each in TMA's 128-byte swizzle:
// a row's 16-byte chunk c lies at chunk c ^ (row % 8) (kiln_staged_chunk). The tensor copy
// fills it with z and stores y from it, one copy per box (or the threads do, without the maps).
// The swizzle is also what keeps the accumulators' accesses free of bank conflicts: a warp's
// eight rows at one column land in eight chunks.
#define KILN_TMA_BOX_BYTES (64 * 128)
#define KILN_TMA_BOXES (KILN_BN * KILN_ELEM_BYTES / 128)
#define KILN_TMA_TILE_BYTES (KILN_TMA_BOXES * KILN_TMA_BOX_BYTES)

// Steps j of 8 columns per box (acc[4j .. 4j + 3] hold step j).
#define KILN_TMA_STEPS_PER_BOX (128 / (8 * KILN_ELEM_BYTES))

// Byte offset in the warpgroup's tile of the thread's pair acc[4j], acc[4j + 1] for the step
// j = box * KILN_TMA_STEPS_PER_BOX + step in box 0: row r0 (r0 % 8 is lane / 4), columns
// 8 step + 2 (lane % 4) and the next. Box b adds b * KILN_TMA_BOX_BYTES, the pair 8 rows down
// (acc[4j + 2], acc[4j + 3]) 1024. The stores and loads go step by step across the boxes, so that
// each offset serves every box as an immediate (a per-pair offset made ptxas hold 64 of them
// beside the accumulators, and spill).
static __device__ KILN_INLINE kiln_u32 kiln_tma_epilogue_offset(int step, int r0, int lane) {
#if KILN_ELEM_BYTES == 2
  const int chunk = step, within = 4 * (lane % 4);
#else
  const int chunk = 2 * step + (lane % 4) / 2, within = 8 * (lane % 2);
#endif
  return r0 * 128 + ((chunk ^ (lane / 4)) * 16) + within;
}

// The two elements of z a thread's pair meets, from the TMA epilogue's tile.
static __device__ KILN_INLINE float2 kiln_tma_z_pair(const unsigned char* tile, int j, int h, int r0,
                                                     int lane) {
  const unsigned char* at = tile + (j / KILN_TMA_STEPS_PER_BOX) * KILN_TMA_BOX_BYTES + h * 1024 +
                            kiln_tma_epilogue_offset(j % KILN_TMA_STEPS_PER_BOX, r0, lane);
#if KILN_ELEM_BYTES == 2
  return kiln_unpack_pair(*(const kiln_u32*)at);
#else
  return *(const float2*)at;
#endif
}
#endif

// The activation on every accumulator, one loop per form and use of v, so that no element
// branches or selects (a per-element `use_v ? v * t : t` made ptxas spill the accumulators):
// rows that are never stored are transformed too, harmlessly. The sigmoid form (two
// special-function instructions an element, the epilogue's bottleneck) stops at the tile's
// last real column, `cols` past n0: a warp-uniform test per 8 columns.
template <int kForm, bool kUseV>
static __device__ KILN_INLINE void kiln_wgmma_act(float (&acc)[KILN_ACCN], const KilnAct& c,
                                                  int cols) {
#pragma unroll
  for (int i = 0; i < KILN_ACCN; ++i) {
#if !defined(KILN_SWAP)
    if (kForm == 1 && i % 4 == 0 && 8 * (i / 4) >= cols) break;
#endif
    const float v = acc[i];
    float t;
    if (kForm == 1) {
      const float v2 = c.p3 == 0.0f ? 0.0f : v * v;  // no inf * 0 for a huge v
      t = c.q * kiln_sigmoid(v * (c.p1 + c.p3 * v2)) + c.r;
    } else if (kForm == 2) {
      t = v < 0.0f ? c.m : 1.0f;
    } else {
      t = kiln_clamp(c.m * v + c.b, c.lo, c.hi);
    }
    acc[i] = kUseV ? v * t : t;
  }
}

// ReLU and clipped ReLU: max (and min) that keep a NaN, as kiln_clamp does, one instruction
// each.
template <bool kHi>
static __device__ KILN_INLINE void kiln_wgmma_clip(float (&acc)[KILN_ACCN], const KilnAct& c) {
#pragma unroll
  for (int i = 0; i < KILN_ACCN; ++i) {
    asm("max.NaN.f32 %0, %0, %1;" : "+f"(acc[i]) : "f"(c.lo));
    if (kHi) asm("min.NaN.f32 %0, %0, %1;" : "+f"(acc[i]) : "f"(c.hi));
  }
}

// Scale and bias of a tile's columns [n0, n0 + KILN_BN), as the warp holds them: lane L has
// column pair 32 c + L of each in chunk c, one coalesced load per chunk, and every thread takes
// its pairs by shuffles (kiln_wgmma_epilogue). Loaded when the unit starts, so that their
// latency hides under its main loop: loaded at the epilogue, they were two dependent trips to
// L2 per unit, which cost a memory-bound 1x1 layer (64 -> 256 channels, N=32) 48% of its
// plain time.
#define KILN_EP_CHUNKS ((KILN_BN / 2 + 31) / 32)
// Early only where the registers allow: held through the main loop beside the accumulators,
// they (and the early residual copy's state) gave the tiles that fill a thread's registers
// (128 x 256 at 168 a thread, 256 x 128 at 96) a stack frame, and a plain 1x1 layer on
// 128 x 256 ran 6% slower. Those load both at the epilogue, each chunk where it is used.
#define KILN_EP_EARLY (KILN_BN / 2 + 4 * KILN_EP_CHUNKS + 48 <= 65536 / KILN_THREADS)
struct KilnEpFactors {
  float2 s[KILN_EP_CHUNKS], b[KILN_EP_CHUNKS];
};

// Chunk c of the tile's scale and bias (1 and 0 where absent or past K).
static __device__ KILN_INLINE void kiln_ep_chunk(const KilnTmaConvParams& p, int n0, int c, float2& s,
                                                 float2& b) {
  const KilnEpilogue& e = p.ep;
  const int pair = 32 * c + threadIdx.x % 32, col = n0 + 2 * pair;
  s = make_float2(1.0f, 1.0f);
  b = make_float2(0.0f, 0.0f);
  if (pair < KILN_BN / 2 && col < p.k) {
    // Volatile: issued here, in program order (ahead of the main loop's waits, or of this
    // chunk's use), not moved by the compiler. One element at a time: an odd K's last pair
    // would read past the arrays.
    const float* sp = (const float*)e.scale + col;
    const float* bp = (const float*)e.bias + col;
    const bool second = col + 1 < p.k;
    if (e.scale) {
      asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(s.x) : "l"(sp));
      if (second) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(s.y) : "l"(sp + 1));
    }
    if (e.bias) {
      asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(b.x) : "l"(bp));
      if (second) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(b.y) : "l"(bp + 1));
    }
  }
}

static __device__ KILN_INLINE KilnEpFactors kiln_ep_factors(const KilnTmaConvParams& p, int n0) {
  KilnEpFactors f;
#pragma unroll
  for (int c = 0; c < KILN_EP_CHUNKS; ++c) kiln_ep_chunk(p, n0, c, f.s[c], f.b[c]);
  return f;
}

// The scale and bias a consumer warpgroup holds and the columns they are for (n0; -1: none
// yet). The persistent kernel keeps them from unit to unit and loads them again only when the
// columns change: most of a block's units share their columns, and a unit of a 1x1 layer with
// 64 input channels has one reduction step, too short to hide two trips to L2 under.
struct KilnEpHeld {
  KilnEpFactors f;
  int n0;
};

#if defined(KILN_SWAP)
// Scale and bias of the transposed products: a thread's accumulators are output channels
// n0 + r0 and n0 + r0 + 8 of its warpgroup's 64, so it needs two of each (no residual: the
// host offers none to the transposed solver).
static __device__ KILN_INLINE void kiln_swap_scale_bias(float (&acc)[KILN_ACCN], const KilnTmaConvParams& p,
                                                        int n0) {
  const KilnEpilogue& e = p.ep;
  if (e.alpha == 1.0f && !e.scale && !e.bias) return;
  const int c0 = n0 + (threadIdx.x / 128) * 64 + ((threadIdx.x % 128) / 32) * 16 + (threadIdx.x % 32) / 4;
  float s[2], b[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int c = c0 + 8 * h;
    s[h] = e.alpha * (e.scale && c < p.k ? ((const float*)e.scale)[c] : 1.0f);
    b[h] = e.bias && c < p.k ? ((const float*)e.bias)[c] : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < KILN_BM / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      acc[4 * j + 2 * h] = acc[4 * j + 2 * h] * s[h] + b[h];
      acc[4 * j + 2 * h + 1] = acc[4 * j + 2 * h + 1] * s[h] + b[h];
    }
  }
}
#endif

#if !defined(KILN_SWAP)
// Scale (times alpha), bias and residual on a thread's accumulators, a copy for each
// combination, so that each runs only its own instructions. kScale: a scale or alpha != 1;
// kZ: 1 a residual (zt: the thread's row of the staged tile), 0 none, 2 zt tested per thread,
// 3 a residual in the TMA epilogue's tile (zt: the warpgroup's tile). In one form for all, a bias alone
// (the batch norm folded into the filter: most layers of a network) also issued the scale's
// shuffles and the residual's predicated-off loads, converts and multiplies, about 390
// instructions a warp per tile of the 64 -> 256 1x1 layer at N=32 where it needs about 110;
// that layer's fused epilogue took 0.0303 ms, 0.0279 so. Two copies (a bias alone, and the
// general form) made the kdb 4% smaller but gained that layer nothing.
template <bool kScale, int kZ>
static __device__ KILN_INLINE void kiln_wgmma_affine(float (&acc)[KILN_ACCN], const KilnTmaConvParams& p,
                                                     const kiln_u32* zt, const KilnEpFactors* f, int n0) {
  const KilnEpilogue& e = p.ep;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int c = 0; c < KILN_EP_CHUNKS; ++c) {
    float2 s, b;
    if (f) {
      s = f->s[c];
      b = f->b[c];
    } else {
      kiln_ep_chunk(p, n0, c, s, b);
    }
    if (kScale) {
      s.x *= e.alpha;
      s.y *= e.alpha;
    }
#pragma unroll
    for (int j = 8 * c; j < 8 * c + 8 && j < KILN_BN / 8; ++j) {
      const int from = 4 * (j % 8) + lane % 4;
      const float bx = __shfl_sync(0xffffffffu, b.x, from), by = __shfl_sync(0xffffffffu, b.y, from);
      float sx = 1.0f, sy = 1.0f;
      if (kScale) {
        sx = __shfl_sync(0xffffffffu, s.x, from);
        sy = __shfl_sync(0xffffffffu, s.y, from);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float& v0 = acc[4 * j + 2 * h];
        float& v1 = acc[4 * j + 2 * h + 1];
        // v + b is v * 1 + b exactly (one rounding either way).
        v0 = kScale ? v0 * sx + bx : v0 + bx;
        v1 = kScale ? v1 * sy + by : v1 + by;
        if (kZ == 1 || (kZ == 2 && zt)) {
          const float2 z = kiln_staged_z_pair(zt, j, h, lane);
          v0 += e.beta * z.x;
          v1 += e.beta * z.y;
        }
#if KILN_TMA_EPILOGUE
        if (kZ == 3) {
          const int r0 = ((threadIdx.x % 128) / 32) * 16 + lane / 4;
          const float2 z = kiln_tma_z_pair((const unsigned char*)zt, j, h, r0, lane);
          v0 += e.beta * z.x;
          v1 += e.beta * z.y;
        }
#endif
      }
    }
  }
}
#endif

// The fused epilogue on one thread's accumulators in wgmma's register layout: acc[4j], acc[4j + 1]
// are the thread's first row, columns n0 + 8j + 2 (lane % 4) and the next; acc[4j + 2],
// acc[4j + 3] the same columns 8 rows down. f holds the tile's scale and bias
// (kiln_ep_factors), or is null: then each chunk is loaded where it is used (columns from n0);
// zt is the thread's first row of the staged z (kiln_stage_z), or with kSwizzledZ the
// warpgroup's TMA epilogue tile holding z, or null without a residual (rows past the output's
// end hold zeros there). A plain convolution
// returns at once. Everything that does not depend on the element (the activation's form,
// which tensors exist) is decided once per thread: the per-element form this replaced cost
// the 1x1 layers 10-20x their plain time. The general form alone in the stream-K objects,
// whose FP32 entries the other copies overflowed (stack frames of 24 to 136 bytes).
template <bool kSwizzledZ = false>
static __device__ KILN_INLINE void kiln_wgmma_epilogue(float (&acc)[KILN_ACCN], const KilnTmaConvParams& p,
                                                       const kiln_u32* zt, const KilnEpFactors* f, int n0) {
  const KilnEpilogue& e = p.ep;
  if (e.alpha == 1.0f && !e.scale && !e.bias && !zt && e.act == KILN_ACT_IDENTITY) return;
#if defined(KILN_SWAP)
  kiln_swap_scale_bias(acc, p, n0);
#else
  const bool scaled = e.alpha != 1.0f || e.scale;
#if defined(KILN_STREAM_K)
  if (scaled || e.bias || zt) kiln_wgmma_affine<true, 2>(acc, p, zt, f, n0);
#else
  if (zt) {
    constexpr int kZ = kSwizzledZ ? 3 : 1;
    if (scaled) {
      kiln_wgmma_affine<true, kZ>(acc, p, zt, f, n0);
    } else {
      kiln_wgmma_affine<false, kZ>(acc, p, zt, f, n0);
    }
  } else if (scaled) {
    kiln_wgmma_affine<true, 0>(acc, p, zt, f, n0);
  } else if (e.bias) {
    kiln_wgmma_affine<false, 0>(acc, p, zt, f, n0);
  }
#endif
#endif
  if (e.act == KILN_ACT_IDENTITY) return;  // exactly v (m v + b would turn -0 into +0)
  const KilnAct c = kiln_act_params(e.act, e.act_a);
  const int cols = p.k - n0;  // real columns of the tile (the transposed products ignore it)
  if (c.form == 2) {
    kiln_wgmma_act<2, true>(acc, c, cols);  // leaky ReLU
  } else if (c.form == 1) {
    if (c.use_v) {
      kiln_wgmma_act<1, true>(acc, c, cols);  // SiLU, GELU
    } else {
      kiln_wgmma_act<1, false>(acc, c, cols);  // sigmoid, tanh
    }
  } else if (c.use_v) {
    kiln_wgmma_act<0, true>(acc, c, cols);  // hard-swish
  } else if (c.m != 1.0f || c.b != 0.0f) {
    kiln_wgmma_act<0, false>(acc, c, cols);  // hard-sigmoid
  } else if (c.hi == kiln_bits_to_float(0x7f800000u)) {
    kiln_wgmma_clip<false>(acc, c);  // ReLU: one instruction per element
  } else {
    kiln_wgmma_clip<true>(acc, c);  // clipped ReLU
  }
}

static __device__ KILN_INLINE void kiln_mbar_init(kiln_u32 bar, kiln_u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
static __device__ KILN_INLINE void kiln_mbar_expect(kiln_u32 bar, kiln_u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
static __device__ KILN_INLINE void kiln_mbar_arrive(kiln_u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
static __device__ KILN_INLINE void kiln_mbar_wait(kiln_u32 bar, kiln_u32 parity) {
  kiln_u32 done;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// Thread-block clusters (split-K reduced in a cluster: the host launches a tile's split-K
// slices as one cluster, blocks ranked by slice). Size 1 when launched without clusters.
static __device__ KILN_INLINE int kiln_cluster_size() {
  kiln_u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return (int)r;
}
// Every thread of every block of the cluster: writes before it visible to reads after it.
// Not .aligned: the producer warp arrives after its one loading thread reconverges.
static __device__ KILN_INLINE void kiln_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
#if !defined(KILN_IM2COL)
static __device__ KILN_INLINE void kiln_tma_load_2d(kiln_u32 dst, const KilnTensorMap* map, int c0,
                                                    int c1, kiln_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
#else
static __device__ KILN_INLINE void kiln_tma_load_3d(kiln_u32 dst, const KilnTensorMap* map, int c0,
                                                    int c1, int c2, kiln_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4}], [%5];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// An im2col load: KILN_BK channels from c of the pixels whose filter window starts at (h, w) in image
// n and the next KILN_BM - 1 windows, each shifted by the tap's offsets (off_w, off_h).
static __device__ KILN_INLINE void kiln_tma_load_im2col(kiln_u32 dst, const KilnTensorMap* map,
                                                        int c, int w, int h, int n,
                                                        unsigned short off_w,
                                                        unsigned short off_h, kiln_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(dst),
      "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(off_w), "h"(off_h)
      : "memory");
}
// The same over a 5-D (NDHWC) tensor: windows starting at (d, h, w), shifted by (off_d, off_h,
// off_w).
static __device__ KILN_INLINE void kiln_tma_load_im2col_5d(kiln_u32 dst, const KilnTensorMap* map,
                                                           int c, int w, int h, int d, int n,
                                                           unsigned short off_w,
                                                           unsigned short off_h,
                                                           unsigned short off_d, kiln_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};" ::"r"(dst),
      "l"(map), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "r"(bar), "h"(off_w), "h"(off_h),
      "h"(off_d)
      : "memory");
}
#endif
// A shared-memory matrix descriptor for a swizzled, K-major operand with KILN_ROW_BYTES rows:
// start address, leading byte offset unused (1), 8 rows between 8-row atoms, and the swizzle
// mode (1: 128 B, 2: 64 B, 3: 32 B).
#define KILN_SWIZZLE_MODE (KILN_ROW_BYTES == 128 ? 1 : KILN_ROW_BYTES == 64 ? 2 : 3)
static __device__ KILN_INLINE kiln_u64 kiln_wgmma_desc(kiln_u32 addr) {
  return (kiln_u64)((addr >> 4) & 0x3fff) | ((kiln_u64)1 << 16) |
         ((kiln_u64)(8 * KILN_ROW_BYTES >> 4) << 32) | ((kiln_u64)KILN_SWIZZLE_MODE << 62);
}
// One m64nNk16 wgmma per specialization (N = the instruction's width). Inline-asm operands are
// numbered: the N / 2 accumulators first (%0 ...), then the A and B descriptors and the
// scale-d flag. Accumulator operands, 8 at a time:
#define KILN_ACC8(i)                                                                        \
  "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),     \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define KILN_ACC32(i) KILN_ACC8(i), KILN_ACC8((i) + 8), KILN_ACC8((i) + 16), KILN_ACC8((i) + 24)
// Their names in the instruction text, 32 at a time.
#define KILN_REGS32_0 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KILN_REGS32_1 \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KILN_REGS32_2 \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define KILN_REGS32_3 \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// The instruction: REGS names the accumulators, A, B and SCALE the operands after them.
#define KILN_WGMMA_ASM(N, REGS, A, B, SCALE, ...)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                          \
               "wgmma.mma_async.sync.aligned.m64n" #N KILN_WGMMA_AB " {" REGS                \
               "}, " A ", " B ", p, " KILN_WGMMA_IMM ";\n}\n"                              \
               : __VA_ARGS__                                                                  \
               : "l"(a), "l"(b), "r"(accumulate))

template <int N> struct KilnWgmma;
// 16 columns: first layers with at most 16 output channels (the detector's stem), where a
// 32-column tile would spend half its products and epilogue on padding.
template <> struct KilnWgmma<16> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(16, "%0, %1, %2, %3, %4, %5, %6, %7", "%8", "%9", "%10", KILN_ACC8(0));
  }
};
template <> struct KilnWgmma<32> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(32,
                   "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15",
                   "%16", "%17", "%18", KILN_ACC8(0), KILN_ACC8(8));
  }
};
template <> struct KilnWgmma<64> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(64, KILN_REGS32_0, "%32", "%33", "%34", KILN_ACC32(0));
  }
};
// Columns between the powers of two, for output channel counts that would leave a 128- or
// 256-column tile mostly padding (96, 160 and 192 channels: one tile, none of it padding).
#define KILN_REGS16_2 \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define KILN_REGS16_4 \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
template <> struct KilnWgmma<96> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(96, KILN_REGS32_0 ", " KILN_REGS16_2, "%48", "%49", "%50", KILN_ACC32(0),
                   KILN_ACC8(32), KILN_ACC8(40));
  }
};
template <> struct KilnWgmma<160> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(160, KILN_REGS32_0 ", " KILN_REGS32_1 ", " KILN_REGS16_4, "%80", "%81",
                   "%82", KILN_ACC32(0), KILN_ACC32(32), KILN_ACC8(64), KILN_ACC8(72));
  }
};
template <> struct KilnWgmma<192> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(192, KILN_REGS32_0 ", " KILN_REGS32_1 ", " KILN_REGS32_2, "%96", "%97",
                   "%98", KILN_ACC32(0), KILN_ACC32(32), KILN_ACC32(64));
  }
};
template <> struct KilnWgmma<128> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(128, KILN_REGS32_0 ", " KILN_REGS32_1, "%64", "%65", "%66", KILN_ACC32(0),
                   KILN_ACC32(32));
  }
};
template <> struct KilnWgmma<256> {
  static __device__ KILN_INLINE void mma(float* d, kiln_u64 a, kiln_u64 b, int accumulate) {
    KILN_WGMMA_ASM(256,
                   KILN_REGS32_0 ", " KILN_REGS32_1 ", " KILN_REGS32_2 ", " KILN_REGS32_3,
                   "%128", "%129", "%130", KILN_ACC32(0), KILN_ACC32(32), KILN_ACC32(64),
                   KILN_ACC32(96));
  }
};

// Keeps the compiler from moving accumulator reads or writes across wgmma's asynchronous
// window.
template <int R> static __device__ KILN_INLINE void kiln_fence_regs(float* d) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#if defined(KILN_FIRST_LAYER)
// ---- First layers (KILN_FIRST_LAYER): a network's input layer, 1-8 channels. ----------------
//
// TMA cannot gather 3-channel pixels (6 bytes) and an im2col matrix of them would be mostly
// padding, so a first kernel packs x to KILN_FL_CPAD channels (zeros after C: 4 for stride 2,
// 8 for stride 1, so that one output pixel's window moves 16 bytes per output pixel), packs w
// to [K, R, row_elems] (zero taps before and after the filter's S, zero channels after C), and
// flags each input row holding an inf or NaN. Then a persistent kernel: a block's unit is
// KILN_BM consecutive output pixels of one output row; the producer loads the R input rows
// their windows cover (a "patch", row-major) with one TMA copy of 128-byte blocks (x viewed as
// [N, H, row blocks, 64]; the patch starts at the block holding the first window, `skew`
// elements before it: one copy per unit keeps the single producer thread off the critical
// path, which 35 narrow copies per unit were), and the consumers multiply it in place: A[ox][e] = patch_row[16 * ox + 2 * e bytes] for e in
// [0, row_elems) is a valid wgmma K-major operand without swizzle (8 rows of 16 bytes per core
// matrix, 128 bytes between 8-row groups, 16 bytes between core matrices along K: they
// overlap, which the descriptor allows), one wgmma per filter row and 16 elements. w stays in
// shared memory for the whole kernel. A zero tap multiplies real pixels: exact for finite
// values, but an inf or NaN there would poison outputs whose true window excludes it, so a
// unit whose rows are flagged is computed directly from x and w instead (CUDA cores, FP32).
//
// KILN_FL_DEPTH > 1: a 3-D first layer (an RGB video stem, KILN_FL_DEPTH filter planes). A
// unit's patch is then the R rows of each of the planes its windows cover, one TMA copy of x
// viewed as [N, D, H, row blocks, 64] (zero-filled past D's edges as past H's), and the
// products run plane after plane, each plane's w in its own whole 64-element boxes.
#ifndef KILN_FL_DEPTH
#define KILN_FL_DEPTH 1
#endif
#if KILN_ELEM_BYTES != 2 || !defined(KILN_FL_STRIDE) || (KILN_FL_STRIDE != 1 && KILN_FL_STRIDE != 2) || !defined(KILN_FL_MMAS)
#error "first layers: FP16 or BF16, KILN_FL_STRIDE 1 or 2, KILN_FL_MMAS"
#endif
#define KILN_FL_CPAD (8 / KILN_FL_STRIDE)

static __device__ KILN_INLINE void kiln_tma_load_5d(kiln_u32 dst, const KilnTensorMap* map, int c0,
                                                    int c1, int c2, int c3, int c4, kiln_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4, %5, %6}], [%7];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
      : "memory");
}
// A descriptor for the unswizzled, overlapping patch operand: start, 16 bytes between core
// matrices along K (leading), 128 bytes between 8-row groups (stride), no swizzle.
static __device__ KILN_INLINE kiln_u64 kiln_patch_desc(kiln_u32 addr) {
  return (kiln_u64)((addr >> 4) & 0x3fff) | ((kiln_u64)(16 >> 4) << 16) |
         ((kiln_u64)(128 >> 4) << 32);
}
static __device__ KILN_INLINE bool kiln_non_finite(kiln_u16 bits) {
#if defined(KILN_DTYPE_FP16)
  return (bits & 0x7c00u) == 0x7c00u;
#else
  return (bits & 0x7f80u) == 0x7f80u;
#endif
}

// Where a first-layer block's shared memory is and the unit grid, computed once per block.
struct KilnFirstLayout {
  kiln_u32 raw, w, stages, staging, full, empty, w_full;
  int skew, blocks, row_bytes, patch_bytes, plane_boxes, w_boxes, tiles_x, units;
};

static __device__ KILN_INLINE KilnFirstLayout kiln_first_layout(const KilnTmaConvParams& p) {
  KilnFirstLayout l;
  l.raw = kiln_smem(kiln_dyn_smem_base());
  // Each filter plane's packed w in whole 64-element boxes (src/solvers/wgmma.rs packs so).
  l.plane_boxes = (p.filter_h * p.row_elems + 63) / 64;
  l.w_boxes = KILN_FL_DEPTH * l.plane_boxes;
  // A unit's first window starts at element (ox0 * stride - pad - lead) * CPAD of its rows,
  // ox0 * stride * CPAD = 8 * ox0 a multiple of 512: the start's offset in its 64-element
  // block is the same for every unit.
  l.skew = ((-(p.pad_w + p.lead) * KILN_FL_CPAD) % 64 + 64) % 64;
  l.blocks = (l.skew + (KILN_BM - 1) * 8 + p.row_elems + 63) / 64;
  l.row_bytes = l.blocks * 128;
  l.patch_bytes = (l.row_bytes * p.filter_h * KILN_FL_DEPTH + 1023) & ~1023;
  l.w = (l.raw + 1023) & ~1023u;
  l.stages = l.w + l.w_boxes * KILN_BN * 128;
  l.staging = l.stages + KILN_STAGES * l.patch_bytes;
  l.full = l.staging + KILN_BM * KILN_PITCH * 4;
  l.empty = l.full + KILN_STAGES * 8;
  l.w_full = l.empty + KILN_STAGES * 8;
  l.tiles_x = (p.out_w + KILN_BM - 1) / KILN_BM;
  l.units = p.m / p.out_w * l.tiles_x;  // images x output planes x rows x tiles per row
  return l;
}

// One output row's KILN_BM pixels from (plane, oy, ox0) computed straight from x and w in FP32,
// this warpgroup's 64 of them: the path for units whose input rows hold an inf or NaN. `plane`
// is n * out_d + the output plane.
static __device__ void kiln_first_layer_direct(const KilnTmaConvParams& p, int plane, int oy,
                                               int ox0, kiln_i64 m0) {
  const int n = plane / p.out_d, od = plane % p.out_d;
  const kiln_t* x = (const kiln_t*)p.x_data;
  const kiln_t* w = (const kiln_t*)p.w_data;
  kiln_t* y = (kiln_t*)p.y;
  for (int i = threadIdx.x % 128; i < 64 * p.k; i += 128) {
    const int r = i / p.k, k = i % p.k, ox = ox0 + r;
    if (ox >= p.out_w) continue;
    float acc = 0.0f;
    for (int ft = 0; ft < KILN_FL_DEPTH; ++ft) {
      const int d = od * p.stride_d - p.pad_d + ft;
      if (d < 0 || d >= p.in_d) continue;
      for (int fr = 0; fr < p.filter_h; ++fr) {
        const int h = oy * p.stride_h - p.pad_h + fr;
        if (h < 0 || h >= p.in_h) continue;
        for (int fs = 0; fs < p.filter_w; ++fs) {
          const int wx = ox * p.stride_w - p.pad_w + fs;
          if (wx < 0 || wx >= p.in_w) continue;
          const kiln_i64 xi = ((((kiln_i64)n * p.in_d + d) * p.in_h + h) * p.in_w + wx) * p.c;
          const kiln_i64 wi =
              ((((kiln_i64)k * KILN_FL_DEPTH + ft) * p.filter_h + fr) * p.filter_w + fs) * p.c;
          for (int c = 0; c < p.c; ++c) acc += kiln_load(x, xi + c) * kiln_load(w, wi + c);
        }
      }
    }
    kiln_store_nhwc(y, m0 + r, k, acc, p.ep);
  }
}

// Whether an input row under unit u's windows holds an inf or NaN (the packing kernel's row
// flags), this lane's share: the warp's lanes load one row each (every thread loading every
// row was about 40 instructions a unit). Not voted here: the caller votes (__any_sync) after
// the products, so that the loads' latency hides under them.
static __device__ KILN_INLINE int kiln_first_layer_flags(const KilnTmaConvParams& p, int u,
                                                         int rows_per_image, int tiles_x) {
  const int plane = u / rows_per_image, oy = (u / tiles_x) % p.out_h;
  const int n = plane / p.out_d, od = plane % p.out_d;
  const int* flags = (const int*)p.row_flags;
  int bad = 0;
  for (int i = threadIdx.x % 32; i < KILN_FL_DEPTH * p.filter_h; i += 32) {
    const int ft = KILN_FL_DEPTH > 1 ? i / p.filter_h : 0;
    const int d = od * p.stride_d - p.pad_d + ft;
    const int h = oy * p.stride_h - p.pad_h + (i - ft * p.filter_h);
    if (d >= 0 && d < p.in_d && h >= 0 && h < p.in_h) bad |= flags[((kiln_i64)n * p.in_d + d) * p.in_h + h];
  }
  return bad;
}

// Input rows per block of the packing kernel: one per warp.
#define KILN_FL_PACK_ROWS 8

// The packing kernel: blocks [0, ceil(N*H / 8)) pack 8 input rows each, one per warp, and flag
// them; the rest pack w.
extern "C" __global__ void __launch_bounds__(256)
    kiln_wgmma_first_layer_pack(const __grid_constant__ KilnTmaConvParams p) {
  kiln_pdl_enter();
  // Input rows: images x input planes x rows.
  const int rows = p.m / (p.out_d * p.out_h * p.out_w) * p.in_d * p.in_h;
  const int row_blocks = (rows + KILN_FL_PACK_ROWS - 1) / KILN_FL_PACK_ROWS;
  const kiln_u16* x = (const kiln_u16*)p.x_data;
  if ((int)blockIdx.x < row_blocks) {
    // Packed rows are a whole number of 64-element blocks (8 x stride pixels): zero pixels
    // end them.
    const int packed_w = (p.in_w + 8 * KILN_FL_STRIDE - 1) / (8 * KILN_FL_STRIDE) * (8 * KILN_FL_STRIDE);
    const kiln_i64 row = (kiln_i64)blockIdx.x * KILN_FL_PACK_ROWS + threadIdx.x / 32;
    if (row >= rows) return;
    int bad = 0;
    // 8 pixels a lane per pass, all loaded before any is stored: the compiler cannot prove x
    // and its copy apart, so interleaved loads and stores would wait out one memory latency
    // per pixel.
    for (int w0 = 0; w0 < packed_w; w0 += 32 * 8) {
      kiln_u16 v[8][KILN_FL_CPAD];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int wx = w0 + u * 32 + threadIdx.x % 32;
        const kiln_i64 px = row * p.in_w + wx;
#pragma unroll
        for (int c = 0; c < KILN_FL_CPAD; ++c) {
          v[u][c] = c < p.c && wx < p.in_w ? x[px * p.c + c] : (kiln_u16)0;
          bad |= kiln_non_finite(v[u][c]);
        }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int wx = w0 + u * 32 + threadIdx.x % 32;
        if (wx >= packed_w) break;
        kiln_u16* out = (kiln_u16*)p.x_packed + (row * packed_w + wx) * KILN_FL_CPAD;
#if KILN_FL_CPAD == 4
        *(uint2*)out =
            make_uint2(v[u][0] | ((kiln_u32)v[u][1] << 16), v[u][2] | ((kiln_u32)v[u][3] << 16));
#else
        *(uint4*)out =
            make_uint4(v[u][0] | ((kiln_u32)v[u][1] << 16), v[u][2] | ((kiln_u32)v[u][3] << 16),
                       v[u][4] | ((kiln_u32)v[u][5] << 16), v[u][6] | ((kiln_u32)v[u][7] << 16));
#endif
      }
    }
    bad = __any_sync(0xffffffffu, bad);
    if (threadIdx.x % 32 == 0) ((int*)p.row_flags)[row] = bad;
    return;
  }
  // w: [K, T, R, S, C] -> [K, T, plane], a plane R x row_elems elements and zeros to a whole
  // 64-element box; element e of a row = tap * CPAD + channel, tap - lead = s.
  const kiln_u16* w = (const kiln_u16*)p.w_data;
  const int plane = (p.filter_h * p.row_elems + 63) / 64 * 64;
  const kiln_i64 total = (kiln_i64)p.k * KILN_FL_DEPTH * plane;
  const kiln_i64 i = ((kiln_i64)blockIdx.x - row_blocks) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int in_plane = (int)(i % plane), fr = in_plane / p.row_elems, e = in_plane % p.row_elems;
  const kiln_i64 kr = i / plane * p.filter_h + fr;  // (k * T + t) * R + r
  const int fs = e / KILN_FL_CPAD - p.lead, c = e % KILN_FL_CPAD;
  ((kiln_u16*)p.w_packed)[i] = (fr < p.filter_h && fs >= 0 && fs < p.filter_w && c < p.c)
                                   ? w[(kr * p.filter_w + fs) * p.c + c]
                                   : (kiln_u16)0;
}

// The persistent first-layer kernel: units blockIdx.x + i gridDim.x. A unit's work is one chain
// (wait for the patch, products, epilogue, stores) with little to overlap inside it, so an SM
// runs several blocks side by side, each one warpgroup per 64 pixels and one producer warp
// (its other three would only hold registers): up to KILN_FL_BLOCKS_PER_SM of them, as many as
// shared memory allows (src/solvers/wgmma.rs mirrors both and sizes the grid so). The bound
// also caps registers: 65536 / (threads x blocks). A 3-D block's w fills about half an SM's
// shared memory, so it runs alone, and with a whole producer warpgroup: with one warp, the
// same code ran the 3x3x3 RGB stem at N=32 18% slower (0.261 -> 0.308 ms on the H200; why is
// not known). Two 3-D blocks an SM took that stem to 0.177 ms but the 3x7x7 stem from 0.243
// to 0.279 (benches/runs/2026-12-03-h200-bias-epilogue/, section M).
#define KILN_FL_THREADS (KILN_CONSUMERS * 128 + (KILN_FL_DEPTH > 1 ? 128 : 32))
#if KILN_FL_DEPTH > 1
#define KILN_FL_BLOCKS_PER_SM 1
#elif KILN_BM == 64
#define KILN_FL_BLOCKS_PER_SM (KILN_BN <= 32 ? 4 : 3)
#else
#define KILN_FL_BLOCKS_PER_SM (KILN_BN <= 32 ? 2 : 1)
#endif
extern "C" __global__ void __launch_bounds__(KILN_FL_THREADS, KILN_FL_BLOCKS_PER_SM)
    kiln_wgmma_first_layer(const __grid_constant__ KilnTmaConvParams p) {
  kiln_pdl_enter();
  const KilnFirstLayout l = kiln_first_layout(p);
  if (threadIdx.x == 0) {
    for (int s = 0; s < KILN_STAGES; ++s) {
      kiln_mbar_init(l.full + 8 * s, 1);
      kiln_mbar_init(l.empty + 8 * s, KILN_CONSUMERS);
    }
    kiln_mbar_init(l.w_full, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int rows_per_image = p.out_h * l.tiles_x;
  if (threadIdx.x / 128 == KILN_CONSUMERS) {
    if (threadIdx.x != KILN_CONSUMERS * 128) return;
    asm volatile("prefetch.tensormap [%0];" ::"l"(&p.x) : "memory");
    // w once, as 64-element boxes of the packed [K, T * plane] matrix.
    kiln_mbar_expect(l.w_full, l.w_boxes * KILN_BN * 128);
    for (int b = 0; b < l.w_boxes; ++b)
      kiln_tma_load_2d(l.w + b * KILN_BN * 128, &p.w, b * 64, 0, l.w_full);
    int g = 0;
    for (int u = blockIdx.x; u < l.units; u += gridDim.x, ++g) {
      const int s = g % KILN_STAGES;
      if (g >= KILN_STAGES) kiln_mbar_wait(l.empty + 8 * s, ((g / KILN_STAGES) - 1) & 1);
      const int plane = u / rows_per_image, oy = (u / l.tiles_x) % p.out_h;
      const int n = plane / p.out_d, od = plane % p.out_d;
      const int ox0 = (u % l.tiles_x) * KILN_BM;
      // The patch: R rows from oy * stride - pad of each of the T planes from od * stride -
      // pad, each row from the first window's start (lead zero taps before it keep that 16-byte
      // aligned); TMA zero-fills outside x.
      const int e0 = (ox0 * KILN_FL_STRIDE - p.pad_w - p.lead) * KILN_FL_CPAD;
      kiln_mbar_expect(l.full + 8 * s, l.row_bytes * p.filter_h * KILN_FL_DEPTH);
      kiln_tma_load_5d(l.stages + s * l.patch_bytes, &p.x, 0, (e0 - l.skew) / 64,
                       oy * p.stride_h - p.pad_h, od * p.stride_d - p.pad_d, n, l.full + 8 * s);
    }
    return;
  }
  const int warpgroup = threadIdx.x / 128;
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r0 = warp * 16 + lane / 4;
  // The products' operands, computed once: w's descriptors (w stays put) and the patch
  // descriptors' offsets from a stage's start (in the descriptor's 16-byte units). The unit
  // loop then spends two instructions per product on them, not a division.
  const int steps = p.row_elems / 16;
  kiln_u64 b_desc[KILN_FL_MMAS];
  kiln_u32 a_step[KILN_FL_MMAS];
#pragma unroll
  for (int i = 0; i < KILN_FL_MMAS; ++i) {
    const int fr = i / steps, j = i - fr * steps;
    const int e = fr * p.row_elems + 16 * j;
    b_desc[i] = kiln_wgmma_desc(l.w + (e / 64) * KILN_BN * 128 + (e % 64) * 2);
    a_step[i] = (fr * l.row_bytes + 32 * j) >> 4;
  }
  kiln_mbar_wait(l.w_full, 0);
  // Every unit covers output channels [0, KILN_BN): their scale and bias, loaded once.
  const KilnEpFactors factors = kiln_ep_factors(p, 0);
  float acc[KILN_BN / 2];
  int g = 0;
  for (int u = blockIdx.x; u < l.units; u += gridDim.x, ++g) {
    const int s = g % KILN_STAGES;
    const int plane = u / rows_per_image, oy = (u / l.tiles_x) % p.out_h;
    const int ox0 = (u % l.tiles_x) * KILN_BM + warpgroup * 64;
    const kiln_i64 m0 = ((kiln_i64)plane * p.out_h + oy) * p.out_w + ox0;
    // This lane's share of whether an input row under this unit holds an inf or NaN: loads
    // issued now, their latency hidden behind the wait and the products. (Loaded a unit ahead,
    // they made every stem 3-8% slower; read by the producer, they lengthened its per-unit
    // path.)
    const int bad = kiln_first_layer_flags(p, u, rows_per_image, l.tiles_x);
    kiln_mbar_wait(l.full + 8 * s, (g / KILN_STAGES) & 1);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    // The stage's descriptor; adding a product's offset stays within the 14-bit address field
    // (shared memory ends below 2^18 bytes).
    const kiln_u64 patch =
        kiln_patch_desc(l.stages + s * l.patch_bytes + 2 * l.skew + warpgroup * 64 * 16);
    // KILN_FL_MMAS = R x row_elems / 16 products a plane, compile-time counts: a run-time loop
    // around wgmma makes ptxas fence its accumulators every iteration (C7519). Plane t's rows
    // follow plane t - 1's in the patch, its w boxes follow in w.
#pragma unroll
    for (int t = 0; t < KILN_FL_DEPTH; ++t) {
      const kiln_u32 a_plane = t * ((p.filter_h * l.row_bytes) >> 4);
      const kiln_u64 b_plane = t * ((l.plane_boxes * KILN_BN * 128) >> 4);
#pragma unroll
      for (int i = 0; i < KILN_FL_MMAS; ++i)
        KilnWgmma<KILN_BN>::mma(acc, patch + a_step[i] + a_plane, b_desc[i] + b_plane, t > 0 || i > 0);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    kiln_fence_regs<KILN_BN / 2>(acc);
    if (threadIdx.x % 128 == 0) kiln_mbar_arrive(l.empty + 8 * s);

    // Rows with an inf or NaN under this unit's windows: computed directly instead.
    if (__any_sync(0xffffffffu, bad)) {
      kiln_first_layer_direct(p, plane, oy, ox0, m0);
      continue;
    }
    // Stage this warpgroup's 64 rows (after its threads have stored the previous unit's).
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    kiln_u32* tile = kiln_staging_tile(l, warpgroup);
    kiln_wgmma_epilogue(acc, p, kiln_stage_z(p, tile, m0, m0 + (p.out_w - ox0), 0, 2 + warpgroup, r0), &factors, 0);
#pragma unroll
    for (int j = 0; j < KILN_BN / 8; ++j) {
      const int col = j * 4 + (lane % 4);
      kiln_u32 lo, hi;
      asm(KILN_CVT_PAIR : "=r"(lo) : "f"(acc[4 * j + 1]), "f"(acc[4 * j + 0]));
      asm(KILN_CVT_PAIR : "=r"(hi) : "f"(acc[4 * j + 3]), "f"(acc[4 * j + 2]));
      tile[r0 * KILN_PITCH + col] = lo;
      tile[(r0 + 8) * KILN_PITCH + col] = hi;
    }
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    kiln_store_staged(p, tile, (int)m0, (int)m0 + (p.out_w - ox0), 0);
  }
}
#else
#define KILN_A_BYTES (KILN_BM * KILN_ROW_BYTES)
#define KILN_B_BYTES (KILN_BN * KILN_ROW_BYTES)
#define KILN_EPILOGUE_BYTES (KILN_BM * KILN_PITCH * 4)
// The one-tile kernel stages y in its pipeline stages.
static_assert(KILN_EPILOGUE_BYTES <= KILN_STAGES * (KILN_A_BYTES + KILN_B_BYTES),
              "the output tile does not fit in the stages");
// What sm_90 gives a block: 227 KiB.
#define KILN_SM90_SHARED_BYTES 232448
// KILN_EPILOGUE_AHEAD: the persistent kernel's TMA epilogue has two output tiles per consumer
// warpgroup where they fit beside the stages, and alternates between them: a unit's z is
// copied in while the warpgroup finishes the unit before (with one tile, each unit's copy
// could start only once the previous unit's store had read the tile, and its latency came
// between the two units), and y is written while the previous unit's store still reads the
// other tile.
#if KILN_TMA_EPILOGUE && KILN_STAGES * (KILN_A_BYTES + KILN_B_BYTES) + 2 * KILN_BM * KILN_BN * KILN_ELEM_BYTES + \
                             KILN_STAGES * 16 + 64 + 1024 <= KILN_SM90_SHARED_BYTES
#define KILN_EPILOGUE_AHEAD 1
#define KILN_STAGING_BYTES (2 * KILN_BM * KILN_BN * KILN_ELEM_BYTES)
#else
#define KILN_EPILOGUE_AHEAD 0
#define KILN_STAGING_BYTES KILN_EPILOGUE_BYTES
#endif
// Dynamic shared memory (the launch asks for exactly this; src/solvers/wgmma.rs mirrors it): the
// stages, the persistent kernel's output staging (its own, so that the producer can load the
// next tile while the consumers store this one; the one-tile kernel stages y in the stages), the
// stages' barriers, the persistent kernel's z barriers (two per consumer warpgroup, at most four
// warpgroups), and 1 KiB to align the stages to the 1024-byte swizzle atom.
#define KILN_SHARED_BYTES(PERSISTENT)                                                    \
  (KILN_STAGES * (KILN_A_BYTES + KILN_B_BYTES) + ((PERSISTENT) ? KILN_STAGING_BYTES + 64 : 0) + \
   KILN_STAGES * 16 + 1024)

// A work unit: output tile (m0, n0), in the order kiln_tile_origin gives, and split-K slice z;
// its slice of the reduction steps is [begin, end) (at least one step: the host keeps splits <=
// reduction steps). Stream-K units say who finishes the tile.
struct KilnUnit {
  int m0, n0, z, begin, end;
  int role;       // KILN_WHOLE, or stream-K's KILN_CONTRIBUTOR / KILN_OWNER
  int tile_end;   // stream-K: the global step after the tile's last
};
#define KILN_WHOLE 0
// Stream-K: a block whose range starts inside a tile computes the tile's later steps first
// and leaves them as an FP32 partial in its slot; the block whose range ends inside the tile
// (it computed the tile's first steps, last) adds every later block's partial and stores.
#define KILN_CONTRIBUTOR 1
#define KILN_OWNER 2
// Stream-K flags: one 32-bit word per block and consumer warpgroup (at most 132 x 4).
#define KILN_SK_FLAGS_BYTES 4096

// Where the blocks' shared memory and sizes are, computed once per block.
struct KilnLayout {
  kiln_u32 raw, stage_a, stage_b, staging, full, empty;
  kiln_u32 z_full;  // persistent: two barriers per consumer warpgroup, its TMA epilogue tiles' z
  // A gated layer (KILN_SCALES_X): each stage's barrier once scaled, and the stage's gate slice.
  kiln_u32 scaled, gate;
  int tiles_m, tiles_n, units, c_iters, k_iters;
  bool n_fastest;  // the tile order (kiln_tile_origin)
  int cluster;     // blocks per cluster: > 1, a tile's split-K slices reduced in the cluster
};

#if KILN_TMA_EPILOGUE
static_assert(KILN_TMA_TILE_BYTES <= 64 * KILN_PITCH * 4, "the TMA epilogue's tile overflows the staging tile");
static_assert(KILN_CONSUMERS <= 4, "the z barriers hold four warpgroups");
static_assert(KILN_STAGES * (KILN_A_BYTES + KILN_B_BYTES) % 1024 == 0, "the staging tile is not 1 KiB aligned");

// The TMA epilogue (the persistent kernel, y and z rows K elements apart: tma_epilogue). Each
// consumer warpgroup's staging tile takes the TMA layout (kiln_tma_epilogue_offset): z arrives
// in it by one tensor copy per box, issued when the unit starts (with KILN_EPILOGUE_AHEAD's two
// tiles, during the unit before) so that it lands during the products; each thread adds its z
// and writes its y in place, and one thread stores the tile by one tensor copy per box, left in
// flight while the next unit runs. The consumers' 16-byte copies and stores it replaces issued
// 64 x KILN_BN / 8 accesses a warpgroup per tile each way.
//
// Tile buf of the warpgroup (0, or 1 with KILN_EPILOGUE_AHEAD).
static __device__ KILN_INLINE kiln_u32 kiln_tma_tile(const KilnLayout& l, int warpgroup, int buf) {
  return l.staging + (buf * KILN_CONSUMERS + warpgroup) * KILN_TMA_TILE_BYTES;
}

// The barrier on which tile buf's z copies complete.
static __device__ KILN_INLINE kiln_u32 kiln_z_barrier(const KilnLayout& l, int warpgroup, int buf) {
  return l.z_full + 8 * (2 * warpgroup + buf);
}

// One thread of the warpgroup: once the tensor stores of the previous unit have read the tile,
// copies z's rows [row0, row0 + 64), columns [n0, n0 + KILN_BN) into it (zeros past the
// edges), completing on the warpgroup's z barrier.
static __device__ KILN_INLINE void kiln_tma_z_issue(const KilnTmaConvParams& p, const KilnLayout& l,
                                                    int warpgroup, int row0, int n0, int buf) {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  const kiln_u32 tile = kiln_tma_tile(l, warpgroup, buf), bar = kiln_z_barrier(l, warpgroup, buf);
  kiln_mbar_expect(bar, KILN_TMA_TILE_BYTES);
#pragma unroll
  for (int b = 0; b < KILN_TMA_BOXES; ++b) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
        "%3}], [%4];" ::"r"(tile + b * KILN_TMA_BOX_BYTES),
        "l"(&p.z_map), "r"(n0 + b * (128 / KILN_ELEM_BYTES)), "r"(row0), "r"(bar)
        : "memory");
  }
}

// One thread of the warpgroup, after every thread's y is in the tile and fenced for the async
// proxy: stores the boxes that hold output channels (TMA drops rows past M).
static __device__ KILN_INLINE void kiln_tma_y_store(const KilnTmaConvParams& p, const KilnLayout& l,
                                                    int warpgroup, int row0, int n0, int buf) {
  const kiln_u32 tile = kiln_tma_tile(l, warpgroup, buf);
#pragma unroll
  for (int b = 0; b < KILN_TMA_BOXES; ++b) {
    const int col = n0 + b * (128 / KILN_ELEM_BYTES);
    if (col >= p.k) break;
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&p.y_map),
                 "r"(col), "r"(row0), "r"(tile + b * KILN_TMA_BOX_BYTES)
                 : "memory");
  }
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Requests z's rows [row0, row0 + 64), columns [n0, n0 + KILN_BN) into epilogue tile buf: by
// tensor copies from one thread (tma), else by the threads' 16-byte copies once every thread
// of the warpgroup has stored what the tile held.
static __device__ KILN_INLINE void kiln_epilogue_z_issue(const KilnTmaConvParams& p, const KilnLayout& l,
                                                         int warpgroup, int row0, int n0, int buf,
                                                         bool tma) {
  if (tma) {
    if (threadIdx.x % 128 == 0) kiln_tma_z_issue(p, l, warpgroup, row0, n0, buf);
  } else {
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    kiln_stage_z_issue<true>(p, (const kiln_u32*)kiln_smem_ptr(l, kiln_tma_tile(l, warpgroup, buf)),
                             row0, p.m, n0);
  }
}
#endif

#if defined(KILN_GROUPED)
// The block's tile, output pixels [m0, m0 + KILN_BM) and channels [n0, n0 + KILN_BN),
// computed straight from x and w in FP32 by the consumer threads, the epilogue applied: the
// path for tiles whose folded products met an inf or NaN. Out of line: it runs only then.
static __device__ __noinline__ void kiln_group_direct(const KilnTmaConvParams& p, int m0, int n0) {
  const kiln_t* x = (const kiln_t*)p.x_data;
  const kiln_t* w = (const kiln_t*)p.w_data;
  const int plane = p.out_h * p.out_w, pixels = p.out_d * plane;
  for (int i = threadIdx.x; i < KILN_BM * KILN_BN; i += KILN_CONSUMERS * 128) {
    const int m = m0 + i / KILN_BN, k = n0 + i % KILN_BN;
    if (m >= p.m || k >= p.k) continue;
    const int n = m / pixels, pixel = m % pixels, in_plane = pixel % plane;
    const int od = pixel / plane, oh = in_plane / p.out_w, ow = in_plane % p.out_w;
    const int c0 = k / p.group_out * p.group_in;
    float acc = 0.0f;
    for (int ft = 0; ft < p.filter_d; ++ft) {
      const int d = od * p.stride_d - p.pad_d + ft * p.dil_d;
      if (d < 0 || d >= p.in_d) continue;
      for (int fr = 0; fr < p.filter_h; ++fr) {
        const int h = oh * p.stride_h - p.pad_h + fr * p.dil_h;
        if (h < 0 || h >= p.in_h) continue;
        for (int fs = 0; fs < p.filter_w; ++fs) {
          const int wx = ow * p.stride_w - p.pad_w + fs * p.dil_w;
          if (wx < 0 || wx >= p.in_w) continue;
          const kiln_i64 xi = ((((kiln_i64)n * p.in_d + d) * p.in_h + h) * p.in_w + wx) * p.c + c0;
          const kiln_i64 wi =
              ((((kiln_i64)k * p.filter_d + ft) * p.filter_h + fr) * p.filter_w + fs) * p.group_in;
          for (int c = 0; c < p.group_in; ++c) acc += kiln_load(x, xi + c) * kiln_load(w, wi + c);
        }
      }
    }
    kiln_store_nhwc((kiln_t*)p.y, m, k, acc, p.ep);
  }
}
#endif

// A's bytes (output pixels x input channels) past which tiles run N fastest: about a third of
// the H100's 50 MB L2.
#define KILN_N_FASTEST_BYTES (16ll << 20)

// Where output tile `tile` starts. M fastest, so that the blocks running at once share w's
// tiles in L2; but where A is larger than KILN_N_FASTEST_BYTES and the tile has several column
// tiles, N fastest: in M order each column tile streams all of A again, which then no longer
// stays in L2 (ResNet-50's layers at batch 32 can read A from memory two to four times), while
// in N order the blocks running at once share A's tiles and w (at most a few MB) stays in L2.
static __device__ KILN_INLINE void kiln_tile_origin(const KilnLayout& l, int tile, int& m0,
                                                    int& n0) {
  if (l.n_fastest) {
    n0 = (tile % l.tiles_n) * KILN_BN;
    m0 = (tile / l.tiles_n) * KILN_BM;
  } else {
    m0 = (tile % l.tiles_m) * KILN_BM;
    n0 = (tile / l.tiles_m) * KILN_BN;
  }
}

static __device__ KILN_INLINE KilnUnit kiln_unit(const KilnTmaConvParams& p, const KilnLayout& l,
                                                 int u) {
  KilnUnit r;
  const int tiles = l.tiles_m * l.tiles_n;
  if (l.cluster > 1) {
    // A cluster is one tile's slices, ranked by slice.
    kiln_tile_origin(l, u / l.cluster, r.m0, r.n0);
    r.z = u % l.cluster;
  } else {
    kiln_tile_origin(l, u % tiles, r.m0, r.n0);
    r.z = u / tiles;
  }
  r.begin = (int)((long long)l.k_iters * r.z / p.splits);
  r.end = (int)((long long)l.k_iters * (r.z + 1) / p.splits);
  r.role = KILN_WHOLE;
  r.tile_end = 0;
  return r;
}

// Stream-K (splits == 0, persistent entry): the reduction steps of every tile laid end to end,
// block b taking steps [start(b), start(b + 1)), as even a share as the steps allow, so that
// few-tile layers keep every SM busy to the end without a second launch. First global step of
// block b:
static __device__ KILN_INLINE int kiln_sk_start(const KilnLayout& l, int b) {
  return (int)((long long)l.tiles_m * l.tiles_n * l.k_iters * b / gridDim.x);
}

// The unit at global step `pos` of a block whose range ends at `stop`: the rest of that tile's
// steps within the range.
static __device__ KILN_INLINE KilnUnit kiln_sk_unit(const KilnLayout& l, int pos, int stop) {
  const int tile = pos / l.k_iters;
  KilnUnit r;
  kiln_tile_origin(l, tile, r.m0, r.n0);
  r.z = 0;
  r.begin = pos - tile * l.k_iters;
  r.end = min(l.k_iters, r.begin + (stop - pos));
  r.tile_end = (tile + 1) * l.k_iters;
  r.role = r.begin > 0 ? KILN_CONTRIBUTOR : (r.end < l.k_iters ? KILN_OWNER : KILN_WHOLE);
  return r;
}

// One float4 of a block's stream-K partial tile: accumulator group j of consumer thread tid
// (the layout the accumulators have, so the owner reads back exactly what it adds).
static __device__ KILN_INLINE float4* kiln_sk_slot(const KilnTmaConvParams& p, int block, int j,
                                                   int tid) {
  float4* slots = (float4*)((unsigned char*)p.workspace + KILN_SK_FLAGS_BYTES);
  return slots + (kiln_i64)block * (KILN_BM * KILN_BN / 4) + j * (KILN_CONSUMERS * 128) + tid;
}

// The producer's loads of one unit; g counts the block's stages over all its units.
static __device__ KILN_INLINE void kiln_produce(const KilnTmaConvParams& p, const KilnLayout& l,
                                                const KilnUnit& t, int& g) {
#if defined(KILN_IM2COL)
  // Where the tile's first output pixel's filter window starts (a 2-D problem's depth is 1:
  // out_d = filter_d = stride_d = 1, pad_d = 0).
  const int plane = p.out_h * p.out_w, pixels = p.out_d * plane;
  const int image = t.m0 / pixels, pixel = t.m0 % pixels, in_plane = pixel % plane;
#if defined(KILN_3D)
  const int d0 = (pixel / plane) * p.stride_d - p.pad_d;
#endif
  const int h0 = (in_plane / p.out_w) * p.stride_h - p.pad_h;
  const int w0 = (in_plane % p.out_w) * p.stride_w - p.pad_w;
  const int taps_hw = p.filter_h * p.filter_w;
#endif
#if defined(KILN_GROUPED)
  const int group_c0 = (t.n0 / p.group_out) * p.group_in;
#else
  const int group_c0 = 0;
#endif
  for (int it = t.begin; it < t.end; ++it, ++g) {
    const int s = g % KILN_STAGES;
    const kiln_u32 full = l.full + 8 * s;
    if (g >= KILN_STAGES) kiln_mbar_wait(l.empty + 8 * s, ((g / KILN_STAGES) - 1) & 1);
    kiln_mbar_expect(full, KILN_A_BYTES + KILN_B_BYTES);
#if defined(KILN_IM2COL)
    const int tap = it / l.c_iters, c0 = (it - tap * l.c_iters) * KILN_BK;
    const int ft = tap / taps_hw, hw = tap - ft * taps_hw;
    const int fr = hw / p.filter_w, fs = hw - fr * p.filter_w;
#if defined(KILN_3D)
    kiln_tma_load_im2col_5d(l.stage_a + s * KILN_A_BYTES, &p.x, group_c0 + c0, w0, h0, d0, image,
                            (unsigned short)(fs * p.dil_w), (unsigned short)(fr * p.dil_h),
                            (unsigned short)(ft * p.dil_d), full);
#else
    kiln_tma_load_im2col(l.stage_a + s * KILN_A_BYTES, &p.x, group_c0 + c0, w0, h0, image,
                         (unsigned short)(fs * p.dil_w), (unsigned short)(fr * p.dil_h), full);
#endif
    kiln_tma_load_3d(l.stage_b + s * KILN_B_BYTES, &p.w, c0, tap, t.n0, full);
#else
    kiln_tma_load_2d(l.stage_a + s * KILN_A_BYTES, &p.x, it * KILN_BK, t.m0, full);
    kiln_tma_load_2d(l.stage_b + s * KILN_B_BYTES, &p.w, it * KILN_BK, t.n0, full);
#endif
  }
}

// Only in the gated solvers' objects (KILN_GATED: ConvWgmmaGemm1x1GatedFwd and
// ConvWgmmaImplicitGemmGatedFwd), so that every other object carries none of it: 2-D dense
// FP16/BF16 tiles of at most 192 x 128 products (src/solvers/wgmma.rs GATE_MAX_PRODUCTS; the
// larger tiles' persistent entries already spill a little).
#if defined(KILN_GATED)
#if defined(KILN_SWAP) || defined(KILN_STEP_CHANNELS) || defined(KILN_3D) || \
    defined(KILN_GROUPED) || defined(KILN_FIRST_LAYER) || defined(KILN_DTYPE_FP32) || \
    KILN_BM * KILN_BN > 192 * 128
#error "KILN_GATED: 2-D dense FP16/BF16 kernels of at most 192 x 128 products only"
#endif
#define KILN_SCALES_X 1

// The gate of a squeeze-and-excitation block folded into this layer (KilnEpilogue::x_scale:
// s[N][C] of x's type; src/solvers/wgmma.rs `scales_x`). The producer warpgroup's warps 1-3
// (KILN_SCALERS threads; its TMA thread is in warp 0) multiply each A stage, once TMA has
// filled it (full barrier), by its rows' images' gates, then hand it to the consumers (scaled
// barrier): they run ahead of the products as the loads do. (Done by the consumers before
// their products, the multiply stalled every stage: such layers ran 2-4x slower.)
// Each stage's gate slice, the tile's images (at most KILN_GATE_IMAGES, which the host checks:
// GATE_MAX_IMAGES) x KILN_BK channels, is loaded a stage ahead, one 16-byte chunk a thread,
// and put in shared memory (l.gate) for the stage. A stage's 16-byte chunk j of row r sits at
// chunk j ^ (r % 8) (TMA's 128-byte swizzle). Each product rounds once to x's type, as a
// separate multiply's stored output would. Rows past M and channels past C are TMA's zeros;
// the slice holds zeros there too.
#define KILN_SCALERS 96
#define KILN_GATE_IMAGES 12
#define KILN_GATE_BARRIER 15  // named barrier of the scaler threads

// This thread's chunk of the gate slice of the stage whose channels start at c0.
static __device__ KILN_INLINE uint4 kiln_gate_chunk(const KilnTmaConvParams& p, int image0,
                                                    int images, int c0) {
  const int t = threadIdx.x % 128 - 32;
  const int image = image0 + t / 8, c = c0 + (t % 8) * 8;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (t < KILN_GATE_IMAGES * 8 && image < images && c < p.c)
    v = __ldg(reinterpret_cast<const uint4*>((const kiln_t*)p.ep.x_scale +
                                             (kiln_i64)image * p.c + c));
  return v;
}

// The first channel of reduction step `it`'s A stage.
static __device__ KILN_INLINE int kiln_step_c0(const KilnLayout& l, int it) {
#if defined(KILN_IM2COL)
  return (it % l.c_iters) * KILN_BK;
#else
  (void)l;
  return it * KILN_BK;
#endif
}

// The scaler threads' share of one unit; g counts the block's stages over all its units, as
// the producer's does.
static __device__ KILN_INLINE void kiln_scale_unit(const KilnTmaConvParams& p,
                                                   const KilnLayout& l, const KilnUnit& t,
                                                   int& g) {
  constexpr int kChunks = KILN_BM * 8, kEach = (kChunks + KILN_SCALERS - 1) / KILN_SCALERS;
  const int tid = threadIdx.x % 128 - 32;
  const int pixels = p.out_d * p.out_h * p.out_w, images = p.m / pixels;
  const int image0 = t.m0 / pixels;
  // Where each of this thread's chunks finds its gate in the slice: fixed over the unit.
  kiln_u32 at[kEach];
#pragma unroll
  for (int i = 0; i < kEach; ++i) {
    const int chunk = tid + i * KILN_SCALERS, r = chunk / 8;
    at[i] = ((t.m0 + r) / pixels - image0) * 128 + ((chunk % 8) ^ (r % 8)) * 16;
  }
  uint4 next = kiln_gate_chunk(p, image0, images, kiln_step_c0(l, t.begin));
  for (int it = t.begin; it < t.end; ++it, ++g) {
    const int s = g % KILN_STAGES;
    // The slice in place (the previous stage's readers passed the barrier at its end), and
    // the next stage's requested.
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(l.gate + tid * 16),
                 "r"(next.x), "r"(next.y), "r"(next.z), "r"(next.w)
                 : "memory");
    asm volatile("bar.sync %0, %1;" ::"n"(KILN_GATE_BARRIER), "n"(KILN_SCALERS) : "memory");
    if (it + 1 < t.end) next = kiln_gate_chunk(p, image0, images, kiln_step_c0(l, it + 1));
    kiln_mbar_wait(l.full + 8 * s, (g / KILN_STAGES) & 1);
    const kiln_u32 a = l.stage_a + s * KILN_A_BYTES;
#pragma unroll
    for (int i = 0; i < kEach; ++i) {
      const int chunk = tid + i * KILN_SCALERS;
      if (kChunks % KILN_SCALERS == 0 || chunk < kChunks) {
        kiln_u32 v0, v1, v2, v3, s0, s1, s2, s3;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                     : "r"(a + chunk * 16));
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3)
                     : "r"(l.gate + at[i]));
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a + chunk * 16),
                     "r"(kiln_mul_pair(v0, s0)), "r"(kiln_mul_pair(v1, s1)),
                     "r"(kiln_mul_pair(v2, s2)), "r"(kiln_mul_pair(v3, s3))
                     : "memory");
      }
    }
    // The threads' stores made visible to wgmma's (async proxy) reads, then the stage
    // released to the consumers.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync %0, %1;" ::"n"(KILN_GATE_BARRIER), "n"(KILN_SCALERS) : "memory");
    if (tid == 0) kiln_mbar_arrive(l.scaled + 8 * s);
  }
}
#else
#define KILN_SCALES_X 0
#endif

// A consumer warpgroup's share of one unit: rows [64 g, 64 g + 64) of the tile, multiplied,
// then stored (split-K: FP32 partials to the workspace; else rounded once, staged, 16-byte
// stores). The accumulators start undefined: the unit's first wgmma does not read them
// (scale-d 0); zeroing them instead would make ptxas serialize the wgmma pipeline (C7515).
//
// held: the scale and bias from the warpgroup's last unit (KilnEpHeld). Persistent kernel: nth
// counts the units this block consumed before this one; next_u is the block's next unit (-1:
// none).
template <bool kPersistent, bool kStreamK>
static __device__ KILN_INLINE void kiln_consume(const KilnTmaConvParams& p, const KilnLayout& l,
                                                const KilnUnit& t, int& g, KilnEpHeld& held, int nth = 0,
                                                int next_u = -1) {
  const int warpgroup = threadIdx.x / 128;
  // The epilogue's inputs, requested before the main loop so that they arrive during it: the
  // tile's scale and bias (where KILN_EP_EARLY), and (persistent kernel, a unit this warpgroup
  // stores whole) z, copied into the staging tile once the warpgroup's threads have stored the
  // previous unit.
  // (Not in the stream-K kernel either, whose owner's partial sums already crowd its registers.)
#if defined(KILN_SWAP)
  constexpr bool kEarly = false;
#else
  constexpr bool kEarly = KILN_EP_EARLY && !kStreamK;
#endif
  if constexpr (kEarly) {
    if (held.n0 != t.n0) {
      held.f = kiln_ep_factors(p, t.n0);
      held.n0 = t.n0;
    }
  }
  // The persistent kernel's staging tile is in the TMA epilogue's layout (kiln_tma_tile), moved
  // by tensor copies where the host encoded y's and z's maps (tma), else by the threads; one
  // form of the epilogue either way, so that the kernel's code stays as compact as before.
  constexpr bool kSwizzled = KILN_TMA_EPILOGUE && kPersistent && !kStreamK;
  const bool tma = kSwizzled && p.tma_epilogue;
  const int row0 = t.m0 + warpgroup * 64;
#if KILN_TMA_EPILOGUE
  // The unit's epilogue tile, and z requested as the unit starts: every unit's with one tile,
  // the first unit's with two (each later one was requested during the unit before).
  const int buf = KILN_EPILOGUE_AHEAD ? nth % 2 : 0;
  if (kSwizzled && p.splits <= 1 && p.ep.z && (!KILN_EPILOGUE_AHEAD || nth == 0))
    kiln_epilogue_z_issue(p, l, warpgroup, row0, t.n0, buf, tma);
#endif
  const bool z_early = !kSwizzled && kEarly && kPersistent && p.splits <= 1 && p.ep.z;
  if (z_early) {
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    kiln_stage_z_issue(p, kiln_staging_tile(l, warpgroup), t.m0 + warpgroup * 64, p.m, t.n0);
  }
  float acc[KILN_ACCN];
  for (int it = t.begin; it < t.end; ++it, ++g) {
    const int j = it - t.begin, s = g % KILN_STAGES;
#if KILN_SCALES_X
    // A gated layer's stage once the scaler threads multiplied it (kiln_scale_unit).
    const kiln_u32 ready = !kStreamK && p.ep.x_scale ? l.scaled : l.full;
#else
    const kiln_u32 ready = l.full;
#endif
    kiln_mbar_wait(ready + 8 * s, (g / KILN_STAGES) & 1);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#if defined(KILN_SWAP)
    // A: this warpgroup's 64 rows of w (output channels); B: every pixel of the A stage.
    const kiln_u32 a = l.stage_b + s * KILN_B_BYTES + warpgroup * 64 * KILN_ROW_BYTES;
    const kiln_u32 b = l.stage_a + s * KILN_A_BYTES;
#pragma unroll
    for (int kk = 0; kk < KILN_ROW_BYTES / 32; ++kk) {
      KilnWgmma<KILN_BM>::mma(acc, kiln_wgmma_desc(a + kk * 32), kiln_wgmma_desc(b + kk * 32),
                              j > 0 || kk > 0);
    }
#else
    const kiln_u32 a = l.stage_a + s * KILN_A_BYTES + warpgroup * 64 * KILN_ROW_BYTES;
    const kiln_u32 b = l.stage_b + s * KILN_B_BYTES;
#pragma unroll
    for (int kk = 0; kk < KILN_ROW_BYTES / 32; ++kk) {  // 32 bytes of each row per instruction
#pragma unroll
      for (int n = 0; n < KILN_BN / KILN_WN; ++n) {
        KilnWgmma<KILN_WN>::mma(acc + n * (KILN_WN / 2), kiln_wgmma_desc(a + kk * 32),
                                kiln_wgmma_desc(b + n * KILN_WN * KILN_ROW_BYTES + kk * 32),
                                j > 0 || kk > 0);
      }
    }
#endif
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    // Keep this stage's group in flight; the previous one is done after the wait, so its
    // stage goes back to the producer.
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    if (j > 0 && threadIdx.x % 128 == 0) kiln_mbar_arrive(l.empty + 8 * ((g - 1) % KILN_STAGES));
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  kiln_fence_regs<KILN_ACCN>(acc);
  // The unit's last stage goes back too: the producer may be waiting on it for the next unit.
  if (kPersistent && threadIdx.x % 128 == 0) kiln_mbar_arrive(l.empty + 8 * ((g - 1) % KILN_STAGES));

  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r0 = warp * 16 + lane / 4;
  if (kStreamK && t.role != KILN_WHOLE) {
    unsigned int* flags = (unsigned int*)p.workspace;
    const unsigned int barrier = 2 + warpgroup;
    if (t.role == KILN_CONTRIBUTOR) {
#pragma unroll
      for (int j = 0; j < KILN_BN / 8; ++j)
        *kiln_sk_slot(p, blockIdx.x, j, threadIdx.x) =
            make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
      // Every thread's partial written, then released to the owner at GPU scope.
      asm volatile("bar.sync %0, 128;" ::"r"(barrier) : "memory");
      if (threadIdx.x % 128 == 0) {
        asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(
                         flags + blockIdx.x * KILN_CONSUMERS + warpgroup)
                     : "memory");
      }
      return;
    }
    // Owner: the blocks after this one whose ranges start inside the tile left partials.
    for (int b = blockIdx.x + 1; b < (int)gridDim.x && kiln_sk_start(l, b) < t.tile_end; ++b) {
      if (threadIdx.x % 128 == 0) {
        const unsigned int* flag = flags + b * KILN_CONSUMERS + warpgroup;
        unsigned int v;
        do {
          asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
        } while (v == 0);
      }
      asm volatile("bar.sync %0, 128;" ::"r"(barrier) : "memory");
#pragma unroll
      for (int j = 0; j < KILN_BN / 8; ++j) {
        const float4 q = __ldcg(kiln_sk_slot(p, b, j, threadIdx.x));
        acc[4 * j] += q.x;
        acc[4 * j + 1] += q.y;
        acc[4 * j + 2] += q.z;
        acc[4 * j + 3] += q.w;
      }
    }
  } else if (!kPersistent && l.cluster > 1) {
    // Split-K reduced in the cluster: the 64-row slice of consumer warpgroup g belongs to the
    // block ranked g % slices; every other block sends its slice's partial (in accumulator
    // order, 16 bytes per thread and step) into the owner's freed stages through distributed
    // shared memory, and the owner adds them and stores. No workspace, no second kernel.
    const int slices = l.cluster, owner = warpgroup % slices;
    const kiln_u32 slot_bytes = 64 * KILN_BN * 4;
    kiln_cluster_sync();  // every block's main loop done: its stages may be written
    if (owner != t.z) {
      const int slot = (warpgroup / slices) * (slices - 1) + (t.z < owner ? t.z : t.z - 1);
      const kiln_u32 local = l.stage_a + slot * slot_bytes + (threadIdx.x % 128) * 16;
      kiln_u32 remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(owner));
#pragma unroll
      for (int j = 0; j < KILN_BN / 8; ++j) {
        asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(remote + j * 2048),
                     "f"(acc[4 * j]), "f"(acc[4 * j + 1]), "f"(acc[4 * j + 2]), "f"(acc[4 * j + 3])
                     : "memory");
      }
    }
    kiln_cluster_sync();  // every partial landed
    if (owner != t.z) {
      // Counted in the staging barrier below, which the owners wait on.
      asm volatile("bar.arrive 1, %0;" ::"n"(KILN_CONSUMERS * 128) : "memory");
      return;
    }
    for (int q = 0; q < slices - 1; ++q) {
      const kiln_u32 from =
          l.stage_a + ((warpgroup / slices) * (slices - 1) + q) * slot_bytes + (threadIdx.x % 128) * 16;
#pragma unroll
      for (int j = 0; j < KILN_BN / 8; ++j) {
        float4 v;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "r"(from + j * 2048)
                     : "memory");
        acc[4 * j] += v.x;
        acc[4 * j + 1] += v.y;
        acc[4 * j + 2] += v.z;
        acc[4 * j + 3] += v.w;
      }
    }
  } else if (p.splits > 1) {
    float* part = (float*)p.workspace + (kiln_i64)t.z * p.m * p.k;
    const int row0 = t.m0 + warpgroup * 64 + r0;
#pragma unroll
    for (int j = 0; j < KILN_BN / 8; ++j) {
      const int col = t.n0 + j * 8 + 2 * (lane % 4);
      if (col >= p.k) continue;
      if (row0 < p.m)
        *(float2*)(part + (kiln_i64)row0 * p.k + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
      if (row0 + 8 < p.m)
        *(float2*)(part + (kiln_i64)(row0 + 8) * p.k + col) =
            make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
    return;
  }
#if defined(KILN_SWAP)
  {
    // The block's whole tile (KILN_BM pixels x KILN_BN channels, in the staging layout),
    // each warpgroup writing its 64 channels, then each storing 64-pixel row groups.
    const unsigned consumers = KILN_CONSUMERS * 128;
#if defined(KILN_GROUPED)
    // Any NaN sum in the block's tile (before the epilogue, whose ReLU would hide it): the
    // tile again, directly.
    kiln_u32 poisoned = 0;
#pragma unroll
    for (int i = 0; i < KILN_ACCN; ++i) poisoned |= (__float_as_uint(acc[i]) & 0x7fffffffu) > 0x7f800000u;
    kiln_u32 any;
    asm volatile(
        "{ .reg .pred in, out; setp.ne.u32 in, %1, 0; bar.red.or.pred out, 1, %2, in; "
        "selp.u32 %0, 1, 0, out; }"
        : "=r"(any)
        : "r"(poisoned), "r"(consumers)
        : "memory");
    if (any) {
      kiln_group_direct(p, t.m0, t.n0);
      return;
    }
#else
    asm volatile("bar.sync 1, %0;" ::"r"(consumers) : "memory");
#endif
    kiln_wgmma_epilogue(acc, p, nullptr, nullptr, t.n0);
    kiln_u16* tile16 = (kiln_u16*)kiln_staging_tile(l, 0);
    const int ch = warpgroup * 64 + r0;
#pragma unroll
    for (int j = 0; j < KILN_BM / 8; ++j) {
      const int px = j * 8 + 2 * (lane % 4);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        kiln_u32 pair;
        asm(KILN_CVT_PAIR : "=r"(pair) : "f"(acc[4 * j + 2 * h + 1]), "f"(acc[4 * j + 2 * h]));
        tile16[px * KILN_PITCH * 2 + ch + 8 * h] = (kiln_u16)(pair & 0xffffu);
        tile16[(px + 1) * KILN_PITCH * 2 + ch + 8 * h] = (kiln_u16)(pair >> 16);
      }
    }
    asm volatile("bar.sync 1, %0;" ::"r"(consumers) : "memory");
    for (int r = warpgroup; r < KILN_BM / 64; r += KILN_CONSUMERS)
      kiln_store_staged(p, kiln_staging_tile(l, r), t.m0 + r * 64, p.m, t.n0);
    return;
  }
#endif
#if KILN_TMA_EPILOGUE
  if constexpr (kSwizzled) {
    const unsigned char* tile = kiln_smem_ptr(l, kiln_tma_tile(l, warpgroup, buf));
#if KILN_EPILOGUE_AHEAD
    // The next unit's z into the other tile, once the previous unit's store has read it; an
    // empty group without one, so that the threads' wait below leaves exactly that group.
    if (p.ep.z && next_u >= 0) {
      const KilnUnit n = kiln_unit(p, l, next_u);
      kiln_epilogue_z_issue(p, l, warpgroup, n.m0 + warpgroup * 64, n.n0, buf ^ 1, tma);
    } else if (p.ep.z && !tma) {
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
#endif
    if (p.ep.z && tma) {
      // Tile buf's (nth / 2)-th copy with two tiles, its nth with one.
      kiln_mbar_wait(kiln_z_barrier(l, warpgroup, buf), (KILN_EPILOGUE_AHEAD ? nth / 2 : nth) & 1);
    } else if (p.ep.z) {
      asm volatile("cp.async.wait_group %0;" ::"n"(KILN_EPILOGUE_AHEAD) : "memory");
      asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    } else {
      // The stores that read this tile last are done reading: with two tiles, all but the
      // previous unit's.
      if (tma && threadIdx.x % 128 == 0)
        asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(KILN_EPILOGUE_AHEAD) : "memory");
      asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    }
    kiln_wgmma_epilogue<true>(acc, p, p.ep.z ? (const kiln_u32*)tile : nullptr, kEarly ? &held.f : nullptr,
                              t.n0);
#pragma unroll
    for (int step = 0; step < KILN_TMA_STEPS_PER_BOX; ++step) {
      unsigned char* out = (unsigned char*)tile + kiln_tma_epilogue_offset(step, r0, lane);
#pragma unroll
      for (int b = 0; b < KILN_TMA_BOXES; ++b) {
        const int j = b * KILN_TMA_STEPS_PER_BOX + step;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned char* at = out + b * KILN_TMA_BOX_BYTES + h * 1024;
#if KILN_ELEM_BYTES == 2
          kiln_u32 pair;
          asm(KILN_CVT_PAIR : "=r"(pair) : "f"(acc[4 * j + 2 * h + 1]), "f"(acc[4 * j + 2 * h]));
          *(kiln_u32*)at = pair;
#else
          *(float2*)at = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
#endif
        }
      }
    }
    if (tma) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
    if (!tma) {
      kiln_store_staged<true>(p, (const kiln_u32*)tile, row0, p.m, t.n0);
    } else if (threadIdx.x % 128 == 0) {
      kiln_tma_y_store(p, l, warpgroup, row0, t.n0, buf);
    }
    return;
  }
#endif
  // Staging: the persistent kernel's own tile (wait until the warpgroup's threads have stored
  // the previous unit's rows); the one-tile kernel's stages (wait until every consumer is past
  // its last wgmma).
  if (!kPersistent) {
    asm volatile("bar.sync 1, %0;" ::"n"(KILN_CONSUMERS * 128) : "memory");
  } else if (!z_early) {
    asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
  }
  kiln_u32* tile = kiln_staging_tile(l, warpgroup);
  const kiln_u32* zt = z_early ? kiln_stage_z_wait(p, tile, 2 + warpgroup, r0)
                               : kiln_stage_z(p, tile, t.m0 + warpgroup * 64, p.m, t.n0, 2 + warpgroup, r0);
  kiln_wgmma_epilogue(acc, p, zt, kEarly ? &held.f : nullptr, t.n0);
#pragma unroll
  for (int j = 0; j < KILN_BN / 8; ++j) {
#if KILN_ELEM_BYTES == 2
    const int col = j * 4 + (lane % 4);  // in pairs
    kiln_u32 lo, hi;
    asm(KILN_CVT_PAIR : "=r"(lo) : "f"(acc[4 * j + 1]), "f"(acc[4 * j + 0]));
    asm(KILN_CVT_PAIR : "=r"(hi) : "f"(acc[4 * j + 3]), "f"(acc[4 * j + 2]));
    tile[r0 * KILN_PITCH + col] = lo;
    tile[(r0 + 8) * KILN_PITCH + col] = hi;
#else
    const int col = j * 8 + 2 * (lane % 4);
    *(float2*)(tile + r0 * KILN_PITCH + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
    *(float2*)(tile + (r0 + 8) * KILN_PITCH + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
#endif
  }
  asm volatile("bar.sync %0, 128;" ::"r"(2 + warpgroup) : "memory");
  kiln_store_staged(p, tile, t.m0 + warpgroup * 64, p.m, t.n0);
}

// The kernel: barriers set up, then the producer warp and the consumer warpgroups run their
// units. One-tile (kPersistent false): the grid is every work unit, one each. Persistent: at
// most one block per SM walks units blockIdx.x, + gridDim.x, ..., its producer running ahead
// into the next unit while the consumers finish this one, so that loads, products and stores
// of consecutive tiles overlap (many-tile layers); the one-tile form stays for few-tile
// layers, where it measured about 10% faster at batch 1.
template <bool kPersistent, bool kStreamK>
static __device__ KILN_INLINE void kiln_wgmma_conv(const KilnTmaConvParams& p) {
  KilnLayout l;
  l.raw = kiln_smem(kiln_dyn_smem_base());
  l.stage_a = (l.raw + 1023) & ~1023u;
  l.stage_b = l.stage_a + KILN_STAGES * KILN_A_BYTES;
  const kiln_u32 after_stages = l.stage_b + KILN_STAGES * KILN_B_BYTES;
  l.staging = kPersistent ? after_stages : l.stage_a;
  l.full = after_stages + (kPersistent ? KILN_STAGING_BYTES : 0);
  l.empty = l.full + KILN_STAGES * 8;
  l.z_full = l.empty + KILN_STAGES * 8;
  // After the z barriers' 64 bytes (src/solvers/wgmma.rs gate_shared_bytes).
  l.scaled = l.z_full + 64;
  l.gate = (l.scaled + KILN_STAGES * 8 + 15) & ~15u;
  l.tiles_m = (p.m + KILN_BM - 1) / KILN_BM;
  l.tiles_n = (p.k + KILN_BN - 1) / KILN_BN;
  l.n_fastest = l.tiles_n > 1 && (long long)p.m * p.c * KILN_ELEM_BYTES > KILN_N_FASTEST_BYTES;
  l.cluster = kiln_cluster_size();
  l.units = l.tiles_m * l.tiles_n * max(p.splits, 1);
#if defined(KILN_GROUPED)
  l.c_iters = (p.group_tile_in + KILN_BK - 1) / KILN_BK;
#else
  l.c_iters = (p.c + KILN_BK - 1) / KILN_BK;
#endif
#if defined(KILN_IM2COL)
  l.k_iters = p.filter_d * p.filter_h * p.filter_w * l.c_iters;
#else
  l.k_iters = l.c_iters;
#endif
  if (threadIdx.x == 0) {
    for (int s = 0; s < KILN_STAGES; ++s) {
      kiln_mbar_init(l.full + 8 * s, 1);
      kiln_mbar_init(l.empty + 8 * s, KILN_CONSUMERS);
    }
    if (kPersistent) {
      for (int w = 0; w < 2 * KILN_CONSUMERS; ++w) kiln_mbar_init(l.z_full + 8 * w, 1);
    }
#if KILN_SCALES_X
    if (!kStreamK && p.ep.x_scale) {
      for (int s = 0; s < KILN_STAGES; ++s) kiln_mbar_init(l.scaled + 8 * s, 1);
    }
#endif
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // Programmatic launch: the set-up above touches no global memory, so it overlaps the previous
  // kernel's tail; everything below waits for it. The next kernel is released once this
  // block's producer has issued its last loads: released at entry, its blocks held SM
  // resources through all of this kernel, and whole networks ran up to 10% slower with
  // programmatic launch than without.
  kiln_pdl_wait();
  int g = 0;
  if (threadIdx.x / 128 == KILN_CONSUMERS) {
    // Producer: one thread issues every TMA load. In a cluster the producer warpgroup's
    // threads stay for the consumers' two cluster barriers.
    if (threadIdx.x % 128 != 0) {
#if KILN_SCALES_X
      if (!kStreamK && p.ep.x_scale && threadIdx.x % 128 >= 32) {
        if (kPersistent) {
          for (int u = blockIdx.x; u < l.units; u += gridDim.x)
            kiln_scale_unit(p, l, kiln_unit(p, l, u), g);
        } else {
          kiln_scale_unit(p, l, kiln_unit(p, l, blockIdx.x), g);
        }
      }
#endif
      if (!kPersistent && l.cluster > 1) {
        kiln_cluster_sync();
        kiln_cluster_sync();
      }
      return;
    }
    asm volatile("prefetch.tensormap [%0];" ::"l"(&p.x) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(&p.w) : "memory");
    if (kStreamK) {
      const int stop = kiln_sk_start(l, blockIdx.x + 1);
      for (int pos = kiln_sk_start(l, blockIdx.x); pos < stop;) {
        const KilnUnit t = kiln_sk_unit(l, pos, stop);
        kiln_produce(p, l, t, g);
        pos += t.end - t.begin;
      }
    } else if (kPersistent) {
      for (int u = blockIdx.x; u < l.units; u += gridDim.x) kiln_produce(p, l, kiln_unit(p, l, u), g);
    } else {
      kiln_produce(p, l, kiln_unit(p, l, blockIdx.x), g);
    }
    kiln_pdl_release();
    if (!kPersistent && l.cluster > 1) {
      kiln_cluster_sync();
      kiln_cluster_sync();
    }
    return;
  }
  KilnEpHeld held;
  held.n0 = -1;
  if (kStreamK) {
    const int stop = kiln_sk_start(l, blockIdx.x + 1);
    for (int pos = kiln_sk_start(l, blockIdx.x); pos < stop;) {
      const KilnUnit t = kiln_sk_unit(l, pos, stop);
      kiln_consume<true, true>(p, l, t, g, held);
      pos += t.end - t.begin;
    }
  } else if (kPersistent) {
    for (int u = blockIdx.x, nth = 0; u < l.units; u += gridDim.x, ++nth) {
      const int next_u = u + (int)gridDim.x < l.units ? u + (int)gridDim.x : -1;
      kiln_consume<true, false>(p, l, kiln_unit(p, l, u), g, held, nth, next_u);
    }
#if KILN_TMA_EPILOGUE
    // The TMA epilogue's last stores have read the tile before the block's shared memory is
    // released (their writes complete with the grid, as every store does).
    if (threadIdx.x % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
  } else {
    kiln_consume<false, false>(p, l, kiln_unit(p, l, blockIdx.x), g, held);
  }
}

// The entry points: kiln_wgmma_gemm1x1[_persistent], or with KILN_IM2COL
// kiln_wgmma_implicit_gemm[_persistent].
#if defined(KILN_IM2COL)
#define KILN_ENTRY(SUFFIX) kiln_wgmma_implicit_gemm##SUFFIX
#else
#define KILN_ENTRY(SUFFIX) kiln_wgmma_gemm1x1##SUFFIX
#endif
extern "C" __global__ void __launch_bounds__(KILN_THREADS, 1)
    KILN_ENTRY()(const __grid_constant__ KilnTmaConvParams p) {
  kiln_wgmma_conv<false, false>(p);
}
extern "C" __global__ void __launch_bounds__(KILN_THREADS, 1)
    KILN_ENTRY(_persistent)(const __grid_constant__ KilnTmaConvParams p) {
  kiln_wgmma_conv<true, false>(p);
}
#if defined(KILN_STREAM_K)
// Stream-K (the host passes splits = 0): one block per SM, each an even share of every tile's
// reduction steps; partial tiles are finished by the block that computed their first steps.
// Built only where it measured faster (the TF32 objects): the entry adds half to an object's
// size, which every cold start decodes and hashes.
extern "C" __global__ void __launch_bounds__(KILN_THREADS, 1)
    KILN_ENTRY(_streamk)(const __grid_constant__ KilnTmaConvParams p) {
  kiln_wgmma_conv<true, true>(p);
}
#endif

#if defined(KILN_GROUPED)
// w packed for the tiles' reductions (groups that are not whole tiles; launched before the
// main kernel, with the same argument): w_packed[k][tap][c], c below group_tile_in, is
// w[k][tap][c - o] for c - o within the group's group_in channels, where o is where output
// channel k's group starts among its tile's input channels, and zero elsewhere.
extern "C" __global__ void __launch_bounds__(256)
    kiln_wgmma_group_pack(const __grid_constant__ KilnTmaConvParams p) {
  kiln_pdl_enter();
  const int taps = p.filter_d * p.filter_h * p.filter_w, width = p.group_tile_in;
  const kiln_i64 total = (kiln_i64)p.k * taps * width;
  const kiln_u16* w = (const kiln_u16*)p.w_data;
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    const int c = (int)(i % width);
    const kiln_i64 row = i / width;  // k * taps + tap
    const int k = (int)(row / taps);
    const int first_group = (k - k % KILN_BN) / p.group_out;  // the tile's
    const int from = c - (k / p.group_out - first_group) * p.group_in;
    ((kiln_u16*)p.w_packed)[i] = from >= 0 && from < p.group_in ? w[row * p.group_in + from] : (kiln_u16)0;
  }
}
#endif

#if defined(KILN_IM2COL) && !defined(KILN_GROUPED) && !defined(KILN_STEP_CHANNELS) && KILN_ELEM_BYTES == 2
// Input channels that do not fill 16-byte vectors (TMA rows start 16-byte aligned): x and w
// copied into the workspace with their channels padded from group_in (the layer's) to c (a
// multiple of 8, what the products reduce over), zeros after: x_packed [N, D, H, W, c] and
// w_packed [K, taps, c]. Launched before the main kernel, with the same argument; 16 bytes
// a thread and step, the 8 loads issued before the store.
extern "C" __global__ void __launch_bounds__(256)
    kiln_wgmma_pad_channels(const __grid_constant__ KilnTmaConvParams p) {
  kiln_pdl_enter();
  const int from = p.group_in, chunks = p.c / 8;
  const kiln_i64 pixels =
      (kiln_i64)(p.m / (p.out_d * p.out_h * p.out_w)) * p.in_d * p.in_h * p.in_w;
  const kiln_i64 rows = pixels + (kiln_i64)p.k * p.filter_d * p.filter_h * p.filter_w;
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < rows * chunks;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    const kiln_i64 row = i / chunks;
    const int c0 = (int)(i % chunks) * 8;
    const bool is_x = row < pixels;
    const kiln_i64 r = is_x ? row : row - pixels;
    const kiln_u16* src = (const kiln_u16*)(is_x ? p.x_data : p.w_data) + r * from;
    kiln_u32 v[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (c0 + e < from) v[e / 2] |= (kiln_u32)src[c0 + e] << (16 * (e % 2));
    *(uint4*)((kiln_u16*)(is_x ? p.x_packed : p.w_packed) + r * p.c + c0) =
        make_uint4(v[0], v[1], v[2], v[3]);
  }
}
#endif

// Split-K's second kernel: y = the sum of the slices' FP32 partials, rounded once, 16 bytes
// of y per thread and step. Launched with the same argument as the main kernel.
extern "C" __global__ void __launch_bounds__(256)
    kiln_wgmma_splitk_reduce(const __grid_constant__ KilnTmaConvParams p) {
  kiln_pdl_enter();
  const kiln_i64 total = (kiln_i64)p.m * p.k / KILN_VEC, slice = (kiln_i64)p.m * p.k;
  const float4* part = (const float4*)p.workspace;
#if KILN_ELEM_BYTES == 4
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    float4 sum = part[i];
    for (int z = 1; z < p.splits; ++z) {
      const float4 a = part[(z * slice) / 4 + i];
      sum.x += a.x; sum.y += a.y; sum.z += a.z; sum.w += a.w;
    }
    const kiln_i64 row = i * 4 / p.k;
    const int col = (int)(i * 4 - row * p.k);
    float v[4] = {sum.x, sum.y, sum.z, sum.w};
    for (int q = 0; q < 4; ++q) v[q] = kiln_epilogue(v[q], col + q, row * p.ep.z_ld + col + q, p.ep);
    *(float4*)((float*)p.y + row * p.ep.y_ld + col) = make_float4(v[0], v[1], v[2], v[3]);
  }
#else
  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (kiln_i64)gridDim.x * blockDim.x) {
    float4 lo = part[2 * i], hi = part[2 * i + 1];
    for (int z = 1; z < p.splits; ++z) {
      const float4 a = part[(z * slice) / 4 + 2 * i], b = part[(z * slice) / 4 + 2 * i + 1];
      lo.x += a.x; lo.y += a.y; lo.z += a.z; lo.w += a.w;
      hi.x += b.x; hi.y += b.y; hi.z += b.z; hi.w += b.w;
    }
    const kiln_i64 row = i * 8 / p.k;
    const int col = (int)(i * 8 - row * p.k);
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    for (int q = 0; q < 8; ++q) v[q] = kiln_epilogue(v[q], col + q, row * p.ep.z_ld + col + q, p.ep);
    uint4 out;
    asm(KILN_CVT_PAIR : "=r"(out.x) : "f"(v[1]), "f"(v[0]));
    asm(KILN_CVT_PAIR : "=r"(out.y) : "f"(v[3]), "f"(v[2]));
    asm(KILN_CVT_PAIR : "=r"(out.z) : "f"(v[5]), "f"(v[4]));
    asm(KILN_CVT_PAIR : "=r"(out.w) : "f"(v[7]), "f"(v[6]));
    *(uint4*)((kiln_u16*)p.y + row * p.ep.y_ld + col) = out;
  }
#endif
}
#endif  // KILN_FIRST_LAYER
