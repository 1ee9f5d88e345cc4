// ConvDirectGroupedFwd: grouped and depthwise 2-D convolution in NHWC (MobileNet, EfficientNet,
// ConvNeXt, ResNeXt layers) on CUDA cores / vector ALUs, vectorized over output channels.
//
// A block is KILN_TX x KILN_TY threads: x runs over vectors of KILN_VEC consecutive output
// channels (a slice of KILN_VEC * KILN_TX channels per block, blockIdx.y picks the slice), y over
// consecutive output pixels (blockIdx.x). The block first stages its slice of the filter in shared
// memory as FP32, transposed to [tap][channel] so a thread reads its KILN_VEC weights of a tap
// side by side. Depthwise layers (one input channel per group, one output channel per group)
// read KILN_VEC input channels with one vector load per tap; where a thread's KILN_VEC outputs
// lie in one group (K/groups a multiple of KILN_VEC), each of the group's input channels is read
// once per tap and multiplies KILN_VEC weights; other groupings read each output's input
// channel on its own (neighbouring lanes still share cache lines). Accumulation is FP32.
//
// Launch: grid (ceil(pixels / KILN_TY), ceil(K / (KILN_VEC * KILN_TX))), block (KILN_TX,
// KILN_TY), dynamic shared memory: filter taps x channels per group x slice x 4 bytes. Needs
// C % KILN_VEC == 0 and K % KILN_VEC == 0 (vector alignment), channels_last = 1, 2-D.
//
// Built with KILN_DW_S, this file is ConvDirectDepthwiseFwd instead (at its end; the two share
// the vector type and the conversions).
#include "epilogue.h"

#if !defined(KILN_VEC) || !defined(KILN_TX) || !defined(KILN_TY)
#error "the perf config defines KILN_VEC, KILN_TX and KILN_TY"
#endif

#define KILN_SLICE (KILN_VEC * KILN_TX)

// KILN_VEC elements read or written by one access.
struct alignas(KILN_VEC * sizeof(kiln_t)) kiln_vec_t {
  kiln_t e[KILN_VEC];
};

// Four FP32 values read as one 16-byte access from shared memory.
struct alignas(16) kiln_f4 {
  float v[4];
};

// One element to FP32. NVIDIA converts FP16 with one instruction (exact, like kiln_gpu.h's
// bit-level conversion, which the AMD build keeps: no AMD device here to check another path on).
#if defined(KILN_DTYPE_FP16) && defined(__CUDACC_RTC__)
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
#elif defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16)
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) { return kiln_load(&v, 0); }
#else
static __device__ KILN_INLINE float kiln_elem_to_float(kiln_t v) { return v; }
#endif

// The block's slice of the filter into shared memory as FP32, [tap][channel in slice]: `taps`
// values per output channel, read in order (coalesced).
static __device__ KILN_INLINE void kiln_stage_filter(float* slice, const kiln_t* __restrict__ w,
                                                     kiln_i32 taps, kiln_i32 slice_base,
                                                     kiln_i32 k_total) {
  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  const kiln_i32 threads = (kiln_i32)(blockDim.x * blockDim.y);
  for (kiln_i32 i = tid; i < taps * KILN_SLICE; i += threads) {
    const kiln_i32 ch = i / taps, t = i - ch * taps;
    const kiln_i32 k = slice_base + ch;
    slice[t * KILN_SLICE + ch] = k < k_total ? kiln_elem_to_float(w[(kiln_i64)k * taps + t]) : 0.0f;
  }
  __syncthreads();
}

#if !defined(KILN_DW_S)
// Elements in 16 bytes of x: what one load of the one-group path reads.
#define KILN_CHUNK (16 / (kiln_i32)sizeof(kiln_t))
struct alignas(16) kiln_chunk_t {
  kiln_t e[KILN_CHUNK];
};

// acc[j] += xv * wc[j] for the thread's KILN_VEC outputs; wc is one input channel's row of the
// staged filter slice.
static __device__ KILN_INLINE void kiln_group_products(float xv, const float* wc,
                                                       float (&acc)[KILN_VEC]) {
#if KILN_VEC % 4 == 0 && defined(__CUDACC_RTC__)
  // 16-byte aligned: the slice, a tap's row and lane0 are multiples of KILN_VEC floats.
  // NVIDIA only: the AMD objects keep the scalar reads kiln-emu was checked on.
#pragma unroll
  for (int j = 0; j < KILN_VEC; j += 4) {
    const kiln_f4 q = *reinterpret_cast<const kiln_f4*>(wc + j);
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j + i] += xv * q.v[i];
  }
#else
#pragma unroll
  for (int j = 0; j < KILN_VEC; ++j) acc[j] += xv * wc[j];
#endif
}

extern "C" __global__ void conv_grouped_nhwc_fwd(const kiln_t* __restrict__ x,
                                                 const kiln_t* __restrict__ w,
                                                 kiln_t* __restrict__ y, KilnConvArgs a,
                                                 KilnEpilogue e) {
  kiln_pdl_start();
  extern __shared__ float kiln_w_slice[];  // [tap * cpg + cg][channel in slice]
  const kiln_i32 cpg = a.c / a.groups;     // input channels per group
  const kiln_i32 kpg = a.k / a.groups;     // output channels per group
  const kiln_i32 taps = a.fil_h * a.fil_w * cpg;
  const kiln_i32 slice_base = (kiln_i32)blockIdx.y * KILN_SLICE;

  kiln_stage_filter(kiln_w_slice, w, taps, slice_base, a.k);

  const kiln_i32 lane0 = (kiln_i32)threadIdx.x * KILN_VEC;  // first channel in the slice
  const kiln_i32 k0 = slice_base + lane0;
  const kiln_i64 pixels = (kiln_i64)a.n * a.out_h * a.out_w;
  const kiln_i64 pix = (kiln_i64)blockIdx.x * blockDim.y + threadIdx.y;
  if (k0 >= a.k || pix >= pixels) return;
  const kiln_i32 ow = (kiln_i32)(pix % a.out_w);
  const kiln_i64 rest = pix / a.out_w;
  const kiln_i32 oh = (kiln_i32)(rest % a.out_h);
  const kiln_i32 n = (kiln_i32)(rest / a.out_h);

  float acc[KILN_VEC];
  for (int j = 0; j < KILN_VEC; ++j) acc[j] = 0.0f;
  const bool depthwise = cpg == 1 && kpg == 1;
  // Whether this thread's KILN_VEC outputs lie in one group (K/groups a multiple of KILN_VEC),
  // and that group's first input channel.
  const bool one_group = kpg % KILN_VEC == 0;
  const kiln_i32 group_c0 = (k0 / kpg) * cpg;
  for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    if (ih < 0 || ih >= a.in_h) continue;
    for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
      const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
      if (iw < 0 || iw >= a.in_w) continue;
      const kiln_i64 pixel = (((kiln_i64)n * a.in_h + ih) * a.in_w + iw) * a.c;
      const float* wt = kiln_w_slice + (fy * a.fil_w + fx) * cpg * KILN_SLICE + lane0;
      if (depthwise) {
        const kiln_vec_t v = *reinterpret_cast<const kiln_vec_t*>(x + pixel + k0);
        for (int j = 0; j < KILN_VEC; ++j) acc[j] += kiln_elem_to_float(v.e[j]) * wt[j];
      } else if (one_group) {
        // Every output of this thread reads the same input channels: each is loaded once and
        // multiplies KILN_VEC weights (one input load per KILN_VEC products, no division).
        const kiln_t* xg = x + pixel + group_c0;
        kiln_i32 cg = 0;
#if defined(__CUDACC_RTC__)
        // The group's channels 16 bytes a load where they come in whole 16-byte runs (C/groups
        // a multiple of them, so C and the group's first channel are too). NVIDIA only: the
        // AMD objects keep the scalar reads kiln-emu was checked on.
        if (cpg % KILN_CHUNK == 0)
          for (; cg < cpg; cg += KILN_CHUNK) {
            const kiln_chunk_t v = *reinterpret_cast<const kiln_chunk_t*>(xg + cg);
#pragma unroll
            for (int i = 0; i < KILN_CHUNK; ++i)
              kiln_group_products(kiln_elem_to_float(v.e[i]), wt + (cg + i) * KILN_SLICE, acc);
          }
#endif
        for (; cg < cpg; ++cg)
          kiln_group_products(kiln_elem_to_float(xg[cg]), wt + cg * KILN_SLICE, acc);
      } else {
        for (kiln_i32 cg = 0; cg < cpg; ++cg) {
          for (int j = 0; j < KILN_VEC; ++j) {
            const kiln_i32 c = ((k0 + j) / kpg) * cpg + cg;
            acc[j] += kiln_elem_to_float(x[pixel + c]) * wt[cg * KILN_SLICE + j];
          }
        }
      }
    }
  }
  kiln_vec_t out;
  for (int j = 0; j < KILN_VEC; ++j)
    kiln_store(out.e, j, kiln_epilogue(acc[j], k0 + j, pix * e.z_ld + k0 + j, e));
  *reinterpret_cast<kiln_vec_t*>(y + pix * e.y_ld + k0) = out;
}
#endif  // !KILN_DW_S

#if defined(KILN_DW_S)
// ConvDirectDepthwiseFwd (this file built with KILN_PW, KILN_PH, KILN_DW_S and KILN_DW_U):
// depthwise 2-D convolution in NHWC (one input and one output channel per group: MobileNet,
// EfficientNet, ConvNeXt layers) on CUDA cores, each thread computing a patch of KILN_PH output
// rows by KILN_PW consecutive output pixels for KILN_VEC consecutive channels. A patch taller than
// one row reuses each input row it loads for every output row the row reaches: a 5x5 filter
// loads 6 input rows for 2 output rows, not 10 (its vertical stride is KILN_DW_U too, undilated).
//
// The kernel is built to issue few instructions per output, since at large batch it otherwise
// runs out of issue slots long before memory bandwidth (the first version issued about 96 warp
// instructions per output element and reached a quarter of the memory bandwidth):
// - the filter size KILN_DW_S (square) and the horizontal stride KILN_DW_U are compile-time, so
//   a filter row's (KILN_PW - 1) * U + S input pixels are loaded once each, one vector load per
//   pixel, every row's loads issued before their products;
// - a column outside the input is a zero vector chosen by one unsigned compare, with 32-bit
//   offsets inside a row;
// - the filter taps come from shared memory (FP32, [tap][channel]) as 16-byte reads;
// - the epilogue's per-channel factors are read once per thread, a residual as one vector per
//   pixel, and outputs round in pairs with one hardware conversion (cvt.rn.f16x2 / bf16x2).
// Accumulation is FP32, one rounding.
//
// Launch: grid (strip groups x channel slices, slices fastest, so the blocks that share input
// pixels run together), block (KILN_TX, KILN_TY); a strip is KILN_PH x KILN_PW output pixels
// (rows x columns), a slice KILN_VEC * KILN_TX channels; dynamic shared memory: (taps + 2) x slice
// x 4 bytes (the filter slice, then the slice's scale and bias), and KILN_TY x slice x 4 more
// where the epilogue writes a global pool's partial sums (kiln_dw_pool_partials). Needs
// C = K = groups, C % KILN_VEC == 0, an S x S filter, horizontal dilation 1, channels_last, 2-D;
// with KILN_PH > 1 also vertical stride KILN_DW_U and vertical dilation 1. NVIDIA only (the
// manifest's archs).
#if !defined(KILN_PW) || !defined(KILN_PH) || !defined(KILN_DW_U)
#error "the depthwise perf config defines KILN_PW, KILN_PH, KILN_DW_S and KILN_DW_U"
#endif
// Input pixels one input row of a strip covers.
#define KILN_COLS ((KILN_PW - 1) * KILN_DW_U + KILN_DW_S)
// Input rows a strip covers.
#define KILN_ROWS ((KILN_PH - 1) * KILN_DW_U + KILN_DW_S)

// KILN_VEC elements of x's or y's type. Where they fill whole 32-bit words (every config but
// single 16-bit channels) they are loaded, zero-filled, converted and stored as words: copied
// as 16-bit elements, the compiler assembles the registers piece by piece.
#if defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16)
#define KILN_DW_ELEM_BYTES 2
#else
#define KILN_DW_ELEM_BYTES 4
#endif
#define KILN_DW_PAIRS (KILN_VEC * KILN_DW_ELEM_BYTES % 4 == 0)
#if KILN_DW_PAIRS
#define KILN_DW_WORDS (KILN_VEC * KILN_DW_ELEM_BYTES / 4)
struct alignas(KILN_VEC * KILN_DW_ELEM_BYTES) kiln_dw_vec {
  kiln_u32 w[KILN_DW_WORDS];
};
#else
#define KILN_DW_WORDS 1
struct kiln_dw_vec {
  kiln_vec_t v;
};
#endif

// One vector of x (or z), or zeros where the pixel lies outside the input.
static __device__ KILN_INLINE kiln_dw_vec kiln_dw_load(const kiln_t* p, bool inside) {
  kiln_dw_vec r;
#if KILN_DW_PAIRS
#pragma unroll
  for (int i = 0; i < KILN_DW_WORDS; ++i) r.w[i] = 0u;
#else
#pragma unroll
  for (int j = 0; j < KILN_VEC; ++j) r.v.e[j] = (kiln_t)0;
#endif
  if (inside) r = *reinterpret_cast<const kiln_dw_vec*>(p);
  return r;
}

// A vector's elements as FP32. FP16 pairs convert straight from the halves of a word (no
// byte permutes); BF16 is the upper half of an FP32.
static __device__ KILN_INLINE void kiln_dw_unpack(const kiln_dw_vec& r, float (&f)[KILN_VEC]) {
#if defined(KILN_DTYPE_FP16) && KILN_DW_PAIRS
#pragma unroll
  for (int i = 0; i < KILN_DW_WORDS; ++i)
    asm("{.reg .f16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi;}"
        : "=f"(f[2 * i]), "=f"(f[2 * i + 1])
        : "r"(r.w[i]));
#elif defined(KILN_DTYPE_BF16) && KILN_DW_PAIRS
#pragma unroll
  for (int i = 0; i < KILN_DW_WORDS; ++i) {
    f[2 * i] = kiln_bits_to_float(r.w[i] << 16);
    f[2 * i + 1] = kiln_bits_to_float(r.w[i] & 0xffff0000u);
  }
#elif KILN_DW_PAIRS
#pragma unroll
  for (int i = 0; i < KILN_DW_WORDS; ++i) f[i] = kiln_bits_to_float(r.w[i]);
#else
#pragma unroll
  for (int j = 0; j < KILN_VEC; ++j) f[j] = kiln_elem_to_float(r.v.e[j]);
#endif
}

// KILN_VEC FP32 values rounded once into y's type, stored at p.
static __device__ KILN_INLINE void kiln_dw_store(kiln_t* p, const float (&f)[KILN_VEC]) {
  kiln_dw_vec o;
#if (defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16)) && KILN_DW_PAIRS
#pragma unroll
  for (int j = 0; j < KILN_VEC; j += 2) {
    // cvt.rn.*x2: the first source lands in the upper half (element j + 1).
#if defined(KILN_DTYPE_FP16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(o.w[j / 2]) : "f"(f[j + 1]), "f"(f[j]));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o.w[j / 2]) : "f"(f[j + 1]), "f"(f[j]));
#endif
  }
#elif KILN_DW_PAIRS
#pragma unroll
  for (int i = 0; i < KILN_DW_WORDS; ++i) o.w[i] = kiln_float_to_bits(f[i]);
#else
#pragma unroll
  for (int j = 0; j < KILN_VEC; ++j) kiln_store(o.v.e, j, f[j]);
#endif
  *reinterpret_cast<kiln_dw_vec*>(p) = o;
}

// The taps of filter row fy for this thread's KILN_VEC channels.
static __device__ KILN_INLINE void kiln_dw_row_taps(const float* slice, int fy, kiln_i32 lane0,
                                                    float (&wv)[KILN_DW_S][KILN_VEC]) {
#pragma unroll
  for (int fx = 0; fx < KILN_DW_S; ++fx) {
    const float* t = slice + (fy * KILN_DW_S + fx) * KILN_SLICE + lane0;
#if KILN_VEC % 4 == 0
#pragma unroll
    for (int j = 0; j < KILN_VEC; j += 4) {
      const kiln_f4 q = *reinterpret_cast<const kiln_f4*>(t + j);
#pragma unroll
      for (int i = 0; i < 4; ++i) wv[fx][j + i] = q.v[i];
    }
#else
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j) wv[fx][j] = t[j];
#endif
  }
}

// Stages the block's filter slice as FP32 [tap][channel] from w's [channel][tap], then waits for
// the block. Consecutive threads write consecutive channels of one tap: ordered by channel
// instead, as kiln_stage_filter is, a warp's stores hit one or two banks (16-way conflicts, 38%
// of a 5x5 kernel's shared-memory wavefronts).
static __device__ KILN_INLINE void kiln_dw_stage_filter(float* slice, const kiln_t* __restrict__ w,
                                                        kiln_i32 slice_base, kiln_i32 k_total) {
  constexpr kiln_i32 taps = KILN_DW_S * KILN_DW_S;
  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  const kiln_i32 threads = (kiln_i32)(blockDim.x * blockDim.y);
  for (kiln_i32 i = tid; i < taps * KILN_SLICE; i += threads) {
    const kiln_i32 t = i / KILN_SLICE, k = slice_base + (i - t * KILN_SLICE);
    slice[i] = k < k_total ? kiln_elem_to_float(w[(kiln_i64)k * taps + t]) : 0.0f;
  }
  __syncthreads();
}

// A global average pool's partial sums of y (KilnEpilogue::pool), so that the pool does not
// read y again: each block sums, per image its strips lie in, its channels over its strips'
// pixels (FP32, after the activation, before rounding) and stores one partial per (image, block,
// channel), in a fixed order (no atomics: every run sums alike). Layout, FP32:
// part[(n * slots + g - g0(n)) * K + k], g the block's strip group (KILN_TY consecutive strips of
// the whole batch, so a group may span images), g0(n) = n * strips / KILN_TY the first group
// holding image n's strips, slots = (strips - 1) / KILN_TY + 2 the most groups an image's strips
// span; kiln_global_pool_finish (kernels/ops.cpp) adds image n's groups g0(n)..g1(n). `red`:
// KILN_TY x slice floats of shared memory, row threadIdx.y's KILN_VEC floats from lane0 each
// thread's own sums (kiln_dw_pool_add; zeros for a thread without a strip or channels).
// src/solvers/depthwise.rs mirrors the layout (PoolPartials).
// The block's place is recomputed here from the arguments: kept from the kernel's start, it
// held registers through the main loop.
static __device__ KILN_INLINE void kiln_dw_pool_partials(const float* red, float* __restrict__ part,
                                                         const KilnConvArgs& a) {
  const kiln_i32 k_total = a.k;
  const kiln_u32 slices = (kiln_u32)(a.k + KILN_SLICE - 1) / KILN_SLICE;
  const kiln_i64 group = blockIdx.x / slices;
  const kiln_i32 slice_base = (kiln_i32)(blockIdx.x % slices) * KILN_SLICE;
  const kiln_u32 image_strips = (kiln_u32)((a.out_w + KILN_PW - 1) / KILN_PW) *
                                (kiln_u32)((a.out_h + KILN_PH - 1) / KILN_PH);
  const kiln_i64 strips = (kiln_i64)a.n * image_strips;
  __syncthreads();
  const kiln_i64 first = group * KILN_TY;
  const kiln_i64 end = first + KILN_TY < strips ? first + KILN_TY : strips;
  const kiln_i64 n_first = first / image_strips;
  const kiln_i32 images = (kiln_i32)((end - 1) / image_strips - n_first) + 1;
  const kiln_u64 slots = (image_strips - 1) / KILN_TY + 2;
  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  for (kiln_i32 i = tid; i < images * KILN_SLICE; i += (kiln_i32)(blockDim.x * blockDim.y)) {
    const kiln_i32 t = i / KILN_SLICE, ch = i - t * KILN_SLICE;
    if (slice_base + ch >= k_total) continue;
    const kiln_i64 n = n_first + t;
    // The block's rows (strips) that lie in image n.
    const kiln_i64 lo = n * image_strips > first ? n * image_strips - first : 0;
    const kiln_i64 hi = (n + 1) * image_strips < end ? (n + 1) * image_strips - first : end - first;
    float sum = 0.0f;
    for (kiln_i64 r = lo; r < hi; ++r) sum += red[r * KILN_SLICE + ch];
    const kiln_i64 g0 = n * image_strips / KILN_TY;
    const kiln_u64 row = (kiln_u64)n * slots + (kiln_u64)(group - g0);
    part[row * (kiln_u64)k_total + slice_base + ch] = sum;
  }
}

// Adds (or with `first`, stores) a pixel's outputs to this thread's pool sums in shared memory:
// kept in registers across the epilogue, the sums raised every object's register count (the
// non-pooling launches' too), by up to 15 registers.
static __device__ KILN_INLINE void kiln_dw_pool_add(float* sums, const float (&r)[KILN_VEC],
                                                    bool first) {
#if KILN_VEC % 4 == 0
#pragma unroll
  for (int j = 0; j < KILN_VEC; j += 4) {
    kiln_f4 q = *reinterpret_cast<const kiln_f4*>(sums + j);
#pragma unroll
    for (int i = 0; i < 4; ++i) q.v[i] = first ? r[j + i] : q.v[i] + r[j + i];
    *reinterpret_cast<kiln_f4*>(sums + j) = q;
  }
#else
#pragma unroll
  for (int j = 0; j < KILN_VEC; ++j) sums[j] = first ? r[j] : sums[j] + r[j];
#endif
}

// Input rows whose vectors are in flight at once: as many as about 64 registers of raw input
// hold (all S rows for FP16 at 4 channels a thread; two rows at 8), at least one.
#define KILN_DW_ROW_REGS (KILN_COLS * KILN_DW_WORDS)
#define KILN_DW_AHEAD_RAW (64 / KILN_DW_ROW_REGS)
#define KILN_DW_AHEAD \
  (KILN_DW_AHEAD_RAW < 1 ? 1 : (KILN_DW_AHEAD_RAW > KILN_ROWS ? KILN_ROWS : KILN_DW_AHEAD_RAW))

// The depthwise kernel; kPooled: its epilogue also writes the global pool's partial sums
// (e.pool). Two entries, so that the plain one's registers are not the pooled one's (summing
// in shared memory still cost some configs a block an SM when both were one entry).
template <bool kPooled>
static __device__ KILN_INLINE void kiln_depthwise_nhwc(const kiln_t* __restrict__ x,
                                                       const kiln_t* __restrict__ w,
                                                       kiln_t* __restrict__ y, const KilnConvArgs& a,
                                                       const KilnEpilogue& e) {
  kiln_pdl_wait();
  extern __shared__ float kiln_w_slice[];  // [tap][channel in slice]
  const kiln_i32 slices = (a.k + KILN_SLICE - 1) / KILN_SLICE;
  const kiln_i32 slice = (kiln_i32)(blockIdx.x % (kiln_u32)slices);
  const kiln_i64 group = blockIdx.x / (kiln_u32)slices;
  const kiln_i32 slice_base = slice * KILN_SLICE;
  const kiln_i32 lane0 = (kiln_i32)threadIdx.x * KILN_VEC;
  const kiln_i32 k0 = slice_base + lane0;
  const kiln_u32 strips_per_row = (kiln_u32)(a.out_w + KILN_PW - 1) / KILN_PW;
  const kiln_u32 row_groups = (kiln_u32)(a.out_h + KILN_PH - 1) / KILN_PH;
  const kiln_i64 strips = (kiln_i64)a.n * row_groups * strips_per_row;
  const kiln_i64 strip = group * KILN_TY + threadIdx.y;
  const bool active = k0 < a.k && strip < strips;
  // n * out_h < 2^31 (checked on the host), so the rest is 32-bit arithmetic.
  const kiln_u32 row_id = active ? (kiln_u32)(strip / strips_per_row) : 0u;
  const kiln_i32 ow0 = (kiln_i32)((kiln_u32)strip - row_id * strips_per_row) * KILN_PW;
  const kiln_i32 oh0 = (kiln_i32)(row_id % row_groups) * KILN_PH;
  const kiln_i32 n = (kiln_i32)(row_id / row_groups);
  const kiln_i32 iw0 = ow0 * KILN_DW_U - a.pad_w;
  const kiln_i32 ih0 = oh0 * a.stride_h - a.pad_h;
  // Input row r of the strip: filter row r of its one output row, or (KILN_PH > 1, vertical
  // stride KILN_DW_U, undilated) the r-th row down from its first output row's first tap.
  const kiln_i32 row_step = KILN_PH == 1 ? a.dil_h : 1;

  // Input vectors of input row r; an inactive thread loads nothing.
  kiln_dw_vec in[KILN_ROWS][KILN_COLS];
  auto load_row = [&](int r) {
    const kiln_i32 ih = ih0 + r * row_step;
    const bool row_in = active && (kiln_u32)ih < (kiln_u32)a.in_h;
    const kiln_t* row = x + ((kiln_i64)n * a.in_h + (row_in ? ih : 0)) * a.in_w * a.c + k0;
#pragma unroll
    for (int col = 0; col < KILN_COLS; ++col) {
      const kiln_i32 iw = iw0 + col;
      in[r][col] = kiln_dw_load(row + iw * a.c, row_in && (kiln_u32)iw < (kiln_u32)a.in_w);
    }
  };
  // The first rows' loads are in flight while the block stages its filter slice, and the
  // epilogue's per-channel factors of the slice after it (FP32, [alpha * scale | bias]: one
  // fused multiply-add per output applies alpha, scale and bias).
#pragma unroll
  for (int r = 0; r < KILN_DW_AHEAD; ++r) load_row(r);
  float* const factors = kiln_w_slice + KILN_DW_S * KILN_DW_S * KILN_SLICE;
  {
    const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
    for (kiln_i32 i = tid; i < 2 * KILN_SLICE; i += (kiln_i32)(blockDim.x * blockDim.y)) {
      const bool is_scale = i < KILN_SLICE;
      const kiln_i32 k = slice_base + (is_scale ? i : i - KILN_SLICE);
      const kiln_u64 src = is_scale ? e.scale : e.bias;
      const float f = src && k < a.k ? kiln_ep_f32(src, k) : (is_scale ? 1.0f : 0.0f);
      factors[i] = is_scale ? e.alpha * f : f;
    }
  }
  kiln_dw_stage_filter(kiln_w_slice, w, slice_base, a.k);
  // Every thread of a block that writes pool partials takes part in their sums.
  constexpr bool pooled = kPooled;
  if (!active && !pooled) return;
  // This thread's pool sums (shared memory, after the factors).
  float* const sums = factors + 2 * KILN_SLICE + threadIdx.y * KILN_SLICE + lane0;
  if (!active) {
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j) sums[j] = 0.0f;
  } else {
    float acc[KILN_PH][KILN_PW][KILN_VEC];
#pragma unroll
    for (int q = 0; q < KILN_PH; ++q)
#pragma unroll
      for (int p = 0; p < KILN_PW; ++p)
#pragma unroll
        for (int j = 0; j < KILN_VEC; ++j) acc[q][p][j] = 0.0f;
#pragma unroll
    for (int r = 0; r < KILN_ROWS; ++r) {
      if (r + KILN_DW_AHEAD < KILN_ROWS) load_row(r + KILN_DW_AHEAD);
      // Output row q reads this input row as its filter row r - q * U.
#pragma unroll
      for (int q = 0; q < KILN_PH; ++q) {
        const int fy = r - q * KILN_DW_U;
        if (fy >= 0 && fy < KILN_DW_S) {
          float wv[KILN_DW_S][KILN_VEC];
          kiln_dw_row_taps(kiln_w_slice, fy, lane0, wv);
#pragma unroll
          for (int col = 0; col < KILN_COLS; ++col) {
            float v[KILN_VEC];
            kiln_dw_unpack(in[r][col], v);
            // Output pixel p reads this column as its tap col - p * U.
#pragma unroll
            for (int p = 0; p < KILN_PW; ++p) {
              const int fx = col - p * KILN_DW_U;
              if (fx >= 0 && fx < KILN_DW_S) {
#pragma unroll
                for (int j = 0; j < KILN_VEC; ++j) acc[q][p][j] += v[j] * wv[fx][j];
              }
            }
          }
        }
      }
    }

    // The next kernel is released once this block's products are done: released at entry, its
    // blocks held SM resources while this grid's later waves still ran.
    kiln_pdl_release();

    // The epilogue of epilogue.h, with its per-channel factors read once for all the strip's
    // pixels; alpha * scale and bias apply as one fused multiply-add (rounded once, where
    // epilogue.h rounds after each), and a sigmoid-form activation's reciprocal is approximate.
    float scale[KILN_VEC], bias[KILN_VEC];
#if KILN_VEC % 4 == 0
#pragma unroll
    for (int j = 0; j < KILN_VEC; j += 4) {
      const kiln_f4 sq = *reinterpret_cast<const kiln_f4*>(factors + lane0 + j);
      const kiln_f4 bq = *reinterpret_cast<const kiln_f4*>(factors + KILN_SLICE + lane0 + j);
#pragma unroll
      for (int i = 0; i < 4; ++i) scale[j + i] = sq.v[i], bias[j + i] = bq.v[i];
    }
#else
#pragma unroll
    for (int j = 0; j < KILN_VEC; ++j)
      scale[j] = factors[lane0 + j], bias[j] = factors[KILN_SLICE + lane0 + j];
#endif
    const KilnAct act = kiln_act_params(e.act, e.act_a);
#pragma unroll
    for (int q = 0; q < KILN_PH; ++q) {
      if (oh0 + q >= a.out_h) break;
      const kiln_i64 pix0 = ((kiln_i64)n * a.out_h + oh0 + q) * a.out_w + ow0;
#pragma unroll
      for (int p = 0; p < KILN_PW; ++p) {
        if (ow0 + p >= a.out_w) break;
        // Each condition is uniform: one branch per pixel, not one per element.
        float r[KILN_VEC];
#pragma unroll
        for (int j = 0; j < KILN_VEC; ++j) r[j] = fmaf(acc[q][p][j], scale[j], bias[j]);
        if (e.z) {
          float zf[KILN_VEC];
          kiln_dw_unpack(kiln_dw_load((const kiln_t*)e.z + (pix0 + p) * e.z_ld + k0, true), zf);
#pragma unroll
          for (int j = 0; j < KILN_VEC; ++j) r[j] += e.beta * zf[j];
        }
        if (e.act != KILN_ACT_IDENTITY) kiln_act_each(r, act);
        if (pooled) kiln_dw_pool_add(sums, r, q == 0 && p == 0);
        kiln_dw_store(y + (pix0 + p) * e.y_ld + k0, r);
      }
    }
  }  // active
  if (pooled) {
    kiln_dw_pool_partials(factors + 2 * KILN_SLICE, (float*)e.pool, a);
  }
}

// On sm_90, the 16-bit configs four pixels wide with 5x5 or 7x7 filters keep four blocks of 128
// threads an SM (registers capped at 128 a thread; they spill 48-104 bytes to local memory):
// so capped, the 5x5 ones ran EfficientNet-B0's 7x7 layers 15-24% faster on an H100, enough
// warps to hide their loads. The others keep the compiler's choice: capped at 128 or 96
// registers they gained nothing or lost up to 9%, and other archs and FP32 are unmeasured
// (benches/runs/2026-12-05-h100-l2-depthwise/).
#if KILN_DW_S * KILN_PW >= 20 && KILN_DW_ELEM_BYTES == 2 && defined(__CUDACC_RTC__) && \
    __CUDA_ARCH__ >= 900
#define KILN_DW_BOUNDS __launch_bounds__(KILN_TX * KILN_TY, 512 / (KILN_TX * KILN_TY))
#else
#define KILN_DW_BOUNDS
#endif

extern "C" __global__ void KILN_DW_BOUNDS
conv_depthwise_nhwc_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                        kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  kiln_depthwise_nhwc<false>(x, w, y, a, e);
}

extern "C" __global__ void KILN_DW_BOUNDS
conv_depthwise_nhwc_fwd_pool(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                             kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue e) {
  kiln_depthwise_nhwc<true>(x, w, y, a, e);
}
#endif  // KILN_DW_S
