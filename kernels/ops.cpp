// kiln's standalone operators: the work around the convolutions of a network that no epilogue
// absorbs. One code object per data type holds them all; they need no find-db (memory-bound,
// one or two kernels each). Every entry takes (a, b, y, KilnOpArgs): a is the input, b the
// second input of the elementwise op or the global pool's workspace (else unused), y the
// output; FP32 arithmetic, one rounding.
#include "epilogue.h"

#define KILN_OP_POOL_MAX 0
#define KILN_OP_POOL_AVG 1          // the padding counts in the divisor (PyTorch's default)
#define KILN_OP_POOL_AVG_EXCLUDE 2  // only the elements inside the input count
#define KILN_OP_RESIZE_NEAREST 0
#define KILN_OP_RESIZE_BILINEAR 1   // half-pixel centres (align_corners false)
#define KILN_OP_ELTWISE_COPY 0      // y = act(a)
#define KILN_OP_ELTWISE_ADD 1       // y = act(a + b)
#define KILN_OP_ELTWISE_MUL 2       // y = act(a * b)

// One operator's shapes and modes. Mirrored by kiln_format::abi::OpArgs; a test checks the size
// and every field offset of the mirror against this definition.
struct KilnOpArgs {
  kiln_i32 n, c, in_h, in_w;  // a's shape
  kiln_i32 out_h, out_w;      // y's spatial size (y has n and c of a)
  kiln_i32 win_h, win_w, stride_h, stride_w, pad_h, pad_w;  // pooling
  kiln_i32 mode;              // KILN_OP_* of the entry
  kiln_i32 channels_last;     // 1: NHWC; 0: NCHW
  kiln_i32 a_ld, y_ld;        // NHWC: elements from one pixel to the next (>= c: a channel slice)
  kiln_i32 b_ld;              // NHWC eltwise: b's pixel stride; 0: b holds one value per (n, c)
  kiln_i32 act;               // KILN_ACT_* applied to the result
  float act_a;                // the activation's parameter
  kiln_i32 grid_threads;      // threads launched (blocks x threads), the grid-stride step
  kiln_i32 splits;            // global pooling: pixel ranges summed apart (kiln_global_pool_*)
  kiln_i32 vec;               // 8: pool, resize and eltwise move 8 channels per thread (16-byte
                              // aligned: channels-last, c, strides and offsets multiples of 8)
  kiln_i32 strips;            // global pool finish from a convolution's partial sums: strips
                              // an image's output holds (0: the partials are this file's own)
  kiln_i32 strip_group;       // strips one block of that convolution summed
  kiln_i32 squeeze;           // squeeze-and-excitation head: the squeeze's channels (S)
  kiln_i32 squeeze_act;       // its KILN_ACT_* (the excitation's is act); an expansion's
  float squeeze_act_a;        // its parameter
  kiln_i32 out_c;             // the excitation's channels (K): y is n x out_c; the expansion's
  kiln_i32 parts;             // blocks an image (each one slice of the K outputs)
  kiln_i32 tile_h, tile_w;    // expansion + depthwise: output pixels a block's tile covers
};

// Loads and stores of one element. NVIDIA's FP16 conversions are one instruction each; the
// portable bit-level ones in kiln_gpu.h cost about ten, which dominated these memory-bound
// kernels. Both round to nearest even (a NaN's payload may differ, not its class).
#if defined(__CUDACC_RTC__) && defined(KILN_DTYPE_FP16)
static __device__ KILN_INLINE float kiln_op_load(const kiln_t* p, kiln_u32 i) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
  return f;
}
static __device__ KILN_INLINE void kiln_op_store(kiln_t* p, kiln_u32 i, float v) {
  kiln_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  p[i] = h;
}
#else
static __device__ KILN_INLINE float kiln_op_load(const kiln_t* p, kiln_u32 i) { return kiln_load(p, i); }
static __device__ KILN_INLINE void kiln_op_store(kiln_t* p, kiln_u32 i, float v) { kiln_store(p, i, v); }
#endif

// Element (n, ch, y, x) of a tensor of c channels and h x w pixels, `ld` apart when channels-last.
// Every tensor an operator touches holds fewer than 2^31 elements (checked on the host), so
// indices are 32-bit: 64-bit division is a long software routine on GPUs.
static __device__ KILN_INLINE kiln_u32 kiln_op_index(const KilnOpArgs& a, kiln_u32 n, kiln_u32 ch, kiln_u32 y,
                                                     kiln_u32 x, kiln_u32 h, kiln_u32 w, kiln_u32 ld) {
  if (a.channels_last) return ((n * h + y) * w + x) * ld + ch;
  return ((n * (kiln_u32)a.c + ch) * h + y) * w + x;
}

// Output group i (in y's dense order: channel fastest when channels-last) as (n, ch, y, x),
// V channels per group (V > 1 only channels-last, c a multiple of V).
template <int V>
static __device__ KILN_INLINE void kiln_op_coords(const KilnOpArgs& a, kiln_u32 i, kiln_u32& n, kiln_u32& ch,
                                                  kiln_u32& oy, kiln_u32& ox) {
  const kiln_u32 c = (kiln_u32)a.c / V, oh = a.out_h, ow = a.out_w;
  if (a.channels_last) {
    ch = i % c * V; i /= c;
    ox = i % ow; i /= ow;
    oy = i % oh; i /= oh;
  } else {
    ox = i % ow; i /= ow;
    oy = i % oh; i /= oh;
    ch = i % c; i /= c;
  }
  n = i;
}

static __device__ KILN_INLINE float kiln_op_act(float v, const KilnOpArgs& a) {
  if (a.act == KILN_ACT_IDENTITY) return v;
  return kiln_act_apply(v, kiln_act_params(a.act, a.act_a));
}

// V consecutive elements from element i: one element, or 8 through 16-byte accesses (the host
// asks for 8 only when every address is 16-byte aligned: channels-last, c and every stride and
// channel offset multiples of 8).
struct __attribute__((aligned(16))) KilnV16 {
  kiln_u32 w[4];
};
#define KILN_V16_WORDS (8 * (int)sizeof(kiln_t) / 16)

template <int V>
static __device__ KILN_INLINE void kiln_loadv(const kiln_t* p, kiln_u32 i, float (&v)[V]) {
  if constexpr (V == 1) {
    v[0] = kiln_op_load(p, i);
  } else {
    KilnV16 raw[KILN_V16_WORDS];
    for (int k = 0; k < KILN_V16_WORDS; ++k) raw[k] = ((const KilnV16*)(p + i))[k];
    const kiln_t* e = (const kiln_t*)raw;
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = kiln_op_load(e, k);
  }
}

template <int V>
static __device__ KILN_INLINE void kiln_storev(kiln_t* p, kiln_u32 i, const float (&v)[V], const KilnOpArgs& a) {
  if constexpr (V == 1) {
    kiln_op_store(p, i, kiln_op_act(v[0], a));
  } else {
    KilnV16 raw[KILN_V16_WORDS];
    kiln_t* e = (kiln_t*)raw;
#pragma unroll
    for (int k = 0; k < 8; ++k) kiln_op_store(e, k, kiln_op_act(v[k], a));
    for (int k = 0; k < KILN_V16_WORDS; ++k) ((KilnV16*)(p + i))[k] = raw[k];
  }
}

// Threads walk the output groups in a grid-stride loop, so any size launches with a bounded
// grid (the step comes from the host: kiln's AMD dialect has no gridDim).
#define KILN_OP_FOR_EACH_GROUP(a, V, i)                                                          \
  const kiln_u32 kiln_total = (kiln_u32)(a).n * ((a).c / V) * (a).out_h * (a).out_w;             \
  for (kiln_u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < kiln_total; i += (a).grid_threads)

// An output pixel's pooling window: input rows [y0, y1) and columns [x0, x1) clipped to the
// input, and `padded`, the size of the window clipped to the padded input (average pooling's
// divisor when it counts the padding).
struct KilnPoolWindow {
  kiln_i32 y0, x0, y1, x1, padded;
};
static __device__ KILN_INLINE KilnPoolWindow kiln_pool_window(const KilnOpArgs& a, kiln_u32 oy, kiln_u32 ox) {
  const kiln_i32 y0 = (kiln_i32)oy * a.stride_h - a.pad_h, x0 = (kiln_i32)ox * a.stride_w - a.pad_w;
  const kiln_i32 y1 = y0 + a.win_h, x1 = x0 + a.win_w;
  const kiln_i32 py1 = y1 < a.in_h + a.pad_h ? y1 : a.in_h + a.pad_h;
  const kiln_i32 px1 = x1 < a.in_w + a.pad_w ? x1 : a.in_w + a.pad_w;
  KilnPoolWindow w;
  w.padded = (py1 - y0) * (px1 - x0);
  w.y0 = y0 < 0 ? 0 : y0;
  w.x0 = x0 < 0 ? 0 : x0;
  w.y1 = y1 < a.in_h ? y1 : a.in_h;
  w.x1 = x1 < a.in_w ? x1 : a.in_w;
  return w;
}

// Max and average pooling (window, stride, padding; ceil mode is the host's choice of out_h
// and out_w). A NaN under the window gives NaN, as PyTorch's max pooling does.
template <int V>
static __device__ KILN_INLINE void kiln_pool2d_body(const kiln_t* __restrict__ x, kiln_t* __restrict__ y,
                                                    const KilnOpArgs& a) {
  KILN_OP_FOR_EACH_GROUP(a, V, i) {
    kiln_u32 n, ch, oy, ox;
    kiln_op_coords<V>(a, i, n, ch, oy, ox);
    const KilnPoolWindow win = kiln_pool_window(a, oy, ox);
    const kiln_i32 y0 = win.y0, x0 = win.x0, y1 = win.y1, x1 = win.x1;
    float acc[V];
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = a.mode == KILN_OP_POOL_MAX ? -kiln_bits_to_float(0x7f800000u) : 0.0f;
    for (kiln_i32 iy = y0; iy < y1; ++iy) {
      for (kiln_i32 ix = x0; ix < x1; ++ix) {
        float v[V];
        kiln_loadv<V>(x, kiln_op_index(a, n, ch, iy, ix, a.in_h, a.in_w, a.a_ld), v);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          if (a.mode == KILN_OP_POOL_MAX) {
            acc[k] = (v[k] > acc[k] || v[k] != v[k]) && acc[k] == acc[k] ? v[k] : acc[k];
          } else {
            acc[k] += v[k];
          }
        }
      }
    }
    const float div = a.mode == KILN_OP_POOL_AVG ? (float)win.padded
                      : a.mode == KILN_OP_POOL_AVG_EXCLUDE ? (float)((y1 - y0) * (x1 - x0)) : 1.0f;
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = a.mode == KILN_OP_POOL_MAX ? acc[k] : acc[k] / div;
    kiln_storev<V>(y, kiln_op_index(a, n, ch, oy, ox, a.out_h, a.out_w, a.y_ld), acc, a);
  }
}

#if defined(__CUDACC_RTC__) && (defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16))
// Max pooling of 16-bit elements, 8 channels a thread, without an activation: the maximum of
// 16-bit values is one of them, so it is taken on the packed pairs (max.NaN: a NaN under the
// window gives NaN) with no conversion. The general form's conversions and FP32 selects made
// the pool issue-bound (ResNet-50's 3x3 / 2 pool at N=32: 0.68 warp instructions a cycle per
// scheduler, 2.1 TB/s).
#if defined(KILN_DTYPE_FP16)
#define KILN_MAX_PAIR "max.NaN.f16x2 %0, %1, %2;"
#define KILN_NEG_INF_PAIR 0xfc00fc00u
#else
#define KILN_MAX_PAIR "max.NaN.bf16x2 %0, %1, %2;"
#define KILN_NEG_INF_PAIR 0xff80ff80u
#endif
#define KILN_POOL_PACKED 1
static __device__ KILN_INLINE void kiln_max_pool_packed(const kiln_t* __restrict__ x, kiln_t* __restrict__ y,
                                                        const KilnOpArgs& a) {
  KILN_OP_FOR_EACH_GROUP(a, 8, i) {
    kiln_u32 n, ch, oy, ox;
    kiln_op_coords<8>(a, i, n, ch, oy, ox);
    const KilnPoolWindow win = kiln_pool_window(a, oy, ox);
    const kiln_i32 iy0 = win.y0, ix0 = win.x0, iy1 = win.y1, ix1 = win.x1;
    KilnV16 m;
#pragma unroll
    for (int k = 0; k < 4; ++k) m.w[k] = KILN_NEG_INF_PAIR;
    for (kiln_i32 iy = iy0; iy < iy1; ++iy) {
      for (kiln_i32 ix = ix0; ix < ix1; ++ix) {
        const KilnV16 v = *(const KilnV16*)(x + kiln_op_index(a, n, ch, iy, ix, a.in_h, a.in_w, a.a_ld));
#pragma unroll
        for (int k = 0; k < 4; ++k) asm(KILN_MAX_PAIR : "=r"(m.w[k]) : "r"(m.w[k]), "r"(v.w[k]));
      }
    }
    *(KilnV16*)(y + kiln_op_index(a, n, ch, oy, ox, a.out_h, a.out_w, a.y_ld)) = m;
  }
}
#else
#define KILN_POOL_PACKED 0
#endif

extern "C" __global__ void kiln_pool2d(const kiln_t* __restrict__ x, const kiln_t* __restrict__ unused,
                                       kiln_t* __restrict__ y, KilnOpArgs a) {
  kiln_pdl_start();
#if KILN_POOL_PACKED
  if (a.vec == 8 && a.mode == KILN_OP_POOL_MAX && a.act == KILN_ACT_IDENTITY) {
    kiln_max_pool_packed(x, y, a);
    return;
  }
#endif
  if (a.vec == 8) {
    kiln_pool2d_body<8>(x, y, a);
  } else {
    kiln_pool2d_body<1>(x, y, a);
  }
}

// Resizing by the ratio of out to in (2x upsampling in the networks kiln runs): nearest
// (PyTorch's `nearest`: source floor(dst * in / out)) or bilinear with half-pixel centres.
template <int V>
static __device__ KILN_INLINE void kiln_resize_body(const kiln_t* __restrict__ x, kiln_t* __restrict__ y,
                                                    const KilnOpArgs& a) {
  const float sy = (float)a.in_h / (float)a.out_h, sx = (float)a.in_w / (float)a.out_w;
  KILN_OP_FOR_EACH_GROUP(a, V, i) {
    kiln_u32 n, ch, oy, ox;
    kiln_op_coords<V>(a, i, n, ch, oy, ox);
    float v[V];
    if (a.mode == KILN_OP_RESIZE_NEAREST) {
      kiln_i32 iy = (kiln_i32)((float)oy * sy), ix = (kiln_i32)((float)ox * sx);  // floor: both >= 0
      if (iy > a.in_h - 1) iy = a.in_h - 1;
      if (ix > a.in_w - 1) ix = a.in_w - 1;
      kiln_loadv<V>(x, kiln_op_index(a, n, ch, iy, ix, a.in_h, a.in_w, a.a_ld), v);
    } else {
      float fy = ((float)oy + 0.5f) * sy - 0.5f, fx = ((float)ox + 0.5f) * sx - 0.5f;
      if (fy < 0.0f) fy = 0.0f;
      if (fx < 0.0f) fx = 0.0f;
      const kiln_i32 y0 = (kiln_i32)fy, x0 = (kiln_i32)fx;
      const kiln_i32 y1 = y0 + 1 < a.in_h ? y0 + 1 : a.in_h - 1;
      const kiln_i32 x1 = x0 + 1 < a.in_w ? x0 + 1 : a.in_w - 1;
      const float ly = fy - (float)y0, lx = fx - (float)x0;
      float v00[V], v01[V], v10[V], v11[V];
      kiln_loadv<V>(x, kiln_op_index(a, n, ch, y0, x0, a.in_h, a.in_w, a.a_ld), v00);
      kiln_loadv<V>(x, kiln_op_index(a, n, ch, y0, x1, a.in_h, a.in_w, a.a_ld), v01);
      kiln_loadv<V>(x, kiln_op_index(a, n, ch, y1, x0, a.in_h, a.in_w, a.a_ld), v10);
      kiln_loadv<V>(x, kiln_op_index(a, n, ch, y1, x1, a.in_h, a.in_w, a.a_ld), v11);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[k] = (1.0f - ly) * ((1.0f - lx) * v00[k] + lx * v01[k]) + ly * ((1.0f - lx) * v10[k] + lx * v11[k]);
      }
    }
    kiln_storev<V>(y, kiln_op_index(a, n, ch, oy, ox, a.out_h, a.out_w, a.y_ld), v, a);
  }
}

extern "C" __global__ void kiln_resize(const kiln_t* __restrict__ x, const kiln_t* __restrict__ unused,
                                       kiln_t* __restrict__ y, KilnOpArgs a) {
  kiln_pdl_start();
  if (a.vec == 8) {
    kiln_resize_body<8>(x, y, a);
  } else {
    kiln_resize_body<1>(x, y, a);
  }
}

// Elementwise: y = act(a), act(a + b) or act(a * b); b is y's shape (b_ld apart when
// channels-last) or, with b_ld = 0, one value per (n, c) broadcast over the pixels
// (squeeze-and-excitation's channel scale).
template <int V>
static __device__ KILN_INLINE void kiln_eltwise_body(const kiln_t* __restrict__ x, const kiln_t* __restrict__ b,
                                                     kiln_t* __restrict__ y, const KilnOpArgs& a) {
  KILN_OP_FOR_EACH_GROUP(a, V, i) {
    kiln_u32 n, ch, oy, ox;
    kiln_op_coords<V>(a, i, n, ch, oy, ox);
    float v[V];
    kiln_loadv<V>(x, kiln_op_index(a, n, ch, oy, ox, a.in_h, a.in_w, a.a_ld), v);
    if (a.mode != KILN_OP_ELTWISE_COPY) {
      const kiln_u32 bi = a.b_ld == 0 ? n * (kiln_u32)a.c + ch
                                      : kiln_op_index(a, n, ch, oy, ox, a.in_h, a.in_w, a.b_ld);
      float w[V];
      kiln_loadv<V>(b, bi, w);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = a.mode == KILN_OP_ELTWISE_ADD ? v[k] + w[k] : v[k] * w[k];
    }
    kiln_storev<V>(y, kiln_op_index(a, n, ch, oy, ox, a.out_h, a.out_w, a.y_ld), v, a);
  }
}

extern "C" __global__ void kiln_eltwise(const kiln_t* __restrict__ x, const kiln_t* __restrict__ b,
                                        kiln_t* __restrict__ y, KilnOpArgs a) {
  kiln_pdl_start();
  if (a.vec == 8) {
    kiln_eltwise_body<8>(x, b, y, a);
  } else {
    kiln_eltwise_body<1>(x, b, y, a);
  }
}

#define KILN_SOFTMAX_THREADS 256

// Softmax over the channels of each pixel: one block of KILN_SOFTMAX_THREADS per pixel, its
// threads striding over the channels, max and sum reduced in shared memory (no wavefront-size assumption).
extern "C" __global__ void
    kiln_softmax(const kiln_t* __restrict__ x, const kiln_t* __restrict__ unused, kiln_t* __restrict__ y,
                 KilnOpArgs a) {
  kiln_pdl_start();
  __shared__ float red[KILN_SOFTMAX_THREADS];
  const kiln_u32 hw = (kiln_u32)a.in_h * a.in_w, pixels = (kiln_u32)a.n * hw;
  for (kiln_u32 p = blockIdx.x; p < pixels; p += a.grid_threads / KILN_SOFTMAX_THREADS) {
    const kiln_u32 n = p / hw, rest = p % hw;
    const kiln_u32 py = rest / a.in_w, px = rest % a.in_w;
    float m = -kiln_bits_to_float(0x7f800000u);
    for (kiln_u32 ch = threadIdx.x; ch < (kiln_u32)a.c; ch += blockDim.x) {
      const float v = kiln_op_load(x, kiln_op_index(a, n, ch, py, px, a.in_h, a.in_w, a.a_ld));
      m = (v > m || v != v) && m == m ? v : m;
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        const float o = red[threadIdx.x + s];
        if ((o > red[threadIdx.x] || o != o) && red[threadIdx.x] == red[threadIdx.x]) red[threadIdx.x] = o;
      }
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (kiln_u32 ch = threadIdx.x; ch < (kiln_u32)a.c; ch += blockDim.x) {
      const float v = kiln_op_load(x, kiln_op_index(a, n, ch, py, px, a.in_h, a.in_w, a.a_ld));
      sum += kiln_exp2((v - m) * 1.4426950408889634f);
    }
    red[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
      __syncthreads();
    }
    const float inv = 1.0f / red[0];
    __syncthreads();
    for (kiln_u32 ch = threadIdx.x; ch < (kiln_u32)a.c; ch += blockDim.x) {
      const float v = kiln_op_load(x, kiln_op_index(a, n, ch, py, px, a.in_h, a.in_w, a.a_ld));
      kiln_op_store(y, kiln_op_index(a, n, ch, py, px, a.in_h, a.in_w, a.y_ld),
                 kiln_exp2((v - m) * 1.4426950408889634f) * inv);
    }
  }
}

// Global average pooling in two kernels, so that a large map with few channels (an
// excitation's pool over 112x112 pixels of 32 channels) still fills the GPU. First, each block
// sums one of `splits` pixel ranges of one sample for a span of channels into FP32 partials (b:
// the workspace, n x c x splits floats): lanes of V channels (channels-last with vec 8: one
// 16-byte load a thread and pixel) side by side, at most 32 of them, and as many pixel lanes as
// fill the block's 256 threads, so that few channels still keep every thread loading; then one
// thread per (n, c) adds its partials, divides and stores. With one range (splits 1) the first
// kernel stores y itself and the second is not launched. (src/ops.rs counts the blocks so.)
template <int V>
static __device__ KILN_INLINE void kiln_global_pool_body(const kiln_t* __restrict__ x, float* __restrict__ part,
                                                         kiln_t* __restrict__ y, const KilnOpArgs& a,
                                                         float* red) {
  const kiln_u32 c = a.c, hw = (kiln_u32)a.in_h * a.in_w, splits = a.splits;
  const kiln_u32 lanes = V == 1 || c / V > 32 ? 32 : c / V, planes = 256 / lanes;
  const kiln_u32 span = lanes * V, chunks = (c + span - 1) / span, per = (hw + splits - 1) / splits;
  const kiln_u32 blocks = (kiln_u32)a.n * chunks * splits;
  const kiln_u32 lane = threadIdx.x % lanes, plane = threadIdx.x / lanes;
  for (kiln_u32 blk = blockIdx.x; blk < blocks; blk += a.grid_threads / 256) {
    const kiln_u32 s = blk % splits, cc = (blk / splits) % chunks, n = blk / splits / chunks;
    const kiln_u32 ch0 = cc * span + lane * V;
    const kiln_u32 p0 = s * per, p1 = p0 + per < hw ? p0 + per : hw;
    float sum[V];
#pragma unroll
    for (int k = 0; k < V; ++k) sum[k] = 0.0f;
    if (ch0 < c && plane < planes) {
      for (kiln_u32 p = p0 + plane; p < p1; p += planes) {
        float v[V];
        kiln_loadv<V>(x, kiln_op_index(a, n, ch0, p / a.in_w, p % a.in_w, a.in_h, a.in_w, a.a_ld), v);
#pragma unroll
        for (int k = 0; k < V; ++k) sum[k] += v[k];
      }
    }
    if (plane < planes) {
#pragma unroll
      for (int k = 0; k < V; ++k) red[plane * span + lane * V + k] = sum[k];
    }
    __syncthreads();
    // The plane sums, one thread per channel of the span.
    if (threadIdx.x < span && cc * span + threadIdx.x < c) {
      const kiln_u32 ch = cc * span + threadIdx.x;
      float t = 0.0f;
      for (kiln_u32 l = 0; l < planes; ++l) t += red[l * span + threadIdx.x];
      if (splits == 1) {
        const float inv = 1.0f / ((float)a.in_h * (float)a.in_w);
        kiln_op_store(y, kiln_op_index(a, n, ch, 0, 0, 1, 1, a.y_ld), kiln_op_act(t * inv, a));
      } else {
        part[((kiln_u32)n * c + ch) * splits + s] = t;
      }
    }
    __syncthreads();
  }
}

extern "C" __global__ void kiln_global_pool_partial(const kiln_t* __restrict__ x, const kiln_t* __restrict__ workspace,
                                                    kiln_t* __restrict__ y, KilnOpArgs a) {
  kiln_pdl_start();
  __shared__ float red[8 * 256];
  if (a.vec == 8) {
    kiln_global_pool_body<8>(x, (float*)workspace, y, a, red);
  } else {
    kiln_global_pool_body<1>(x, (float*)workspace, y, a, red);
  }
}

// The mean from a depthwise convolution's partial sums (KilnEpilogue::pool, [n][slot][c] as
// conv_grouped.cpp's kiln_dw_pool_partials writes them: image n's strips were summed by blocks
// g0(n)..g1(n), g0(n) = n * strips / strip_group, in slots 0..g1 - g0; splits: slots an image
// has room for). A block per (sample, 32 channels): 8 planes of threads add every 8th slot
// (consecutive threads read consecutive channels), then one thread per channel adds the planes.
static __device__ KILN_INLINE void kiln_pool_strip_finish(const float* __restrict__ part,
                                                          kiln_t* __restrict__ y, const KilnOpArgs& a,
                                                          float* red) {
  const kiln_u32 c = a.c, chunks = (c + 31) / 32, blocks = (kiln_u32)a.n * chunks;
  const kiln_u64 strips = (kiln_u32)a.strips, group = (kiln_u32)a.strip_group;
  const kiln_u64 slots = (kiln_u32)a.splits;
  const kiln_u32 lane = threadIdx.x % 32, plane = threadIdx.x / 32;
  const float inv = 1.0f / ((float)a.in_h * (float)a.in_w);
  for (kiln_u32 blk = blockIdx.x; blk < blocks; blk += a.grid_threads / 256) {
    const kiln_u32 n = blk / chunks, ch = (blk % chunks) * 32 + lane;
    const kiln_u64 count = ((n + 1) * strips - 1) / group - n * strips / group + 1;
    float t = 0.0f;
    if (ch < c) {
      for (kiln_u64 s = plane; s < count; s += 8) t += part[(n * slots + s) * c + ch];
    }
    red[plane * 32 + lane] = t;
    __syncthreads();
    if (plane == 0 && ch < c) {
      float sum = 0.0f;
      for (int l = 0; l < 8; ++l) sum += red[l * 32 + lane];
      kiln_op_store(y, kiln_op_index(a, n, ch, 0, 0, 1, 1, a.y_ld), kiln_op_act(sum * inv, a));
    }
    __syncthreads();
  }
}

extern "C" __global__ void kiln_global_pool_finish(const kiln_t* __restrict__ workspace, const kiln_t* __restrict__ unused,
                                                   kiln_t* __restrict__ y, KilnOpArgs a) {
  kiln_pdl_start();
  if (a.strip_group > 0) {
    __shared__ float red[256];
    kiln_pool_strip_finish((const float*)workspace, y, a, red);
    return;
  }
  const float* part = (const float*)workspace;
  const kiln_u32 total = (kiln_u32)a.n * a.c, splits = a.splits;
  const float inv = 1.0f / ((float)a.in_h * (float)a.in_w);
  for (kiln_u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += a.grid_threads) {
    float t = 0.0f;
    for (kiln_u32 s = 0; s < splits; ++s) t += part[i * splits + s];
    const kiln_u32 n = i / a.c, ch = i % a.c;
    kiln_op_store(y, kiln_op_index(a, n, ch, 0, 0, 1, 1, a.y_ld), kiln_op_act(t * inv, a));
  }
}

// A squeeze-and-excitation head in one kernel: the global pool's mean, the squeeze (a 1x1
// layer C -> S with bias and activation) and the excitation (S -> K, bias, activation) of one
// image, where a network otherwise runs three launches (a pool finish and two few-pixel dots),
// each waiting for the last. a is the pool's source: a convolution's FP32 partial sums (mode
// 1, laid out as kiln_global_pool_finish reads them) or the pooled tensor, n x c (mode 0). b
// holds the parameters, packed by the host (src/ops.rs, `SqueezeExcite::pack`): the biases b1
// [S] and b2 [K] in FP32, then W1 [S][C] and W2 [K][S] in the element type, each part 16-byte
// aligned. y is the gate, n x K. The pooled values and the squeeze's outputs are
// rounded to the element type, as the unfused layers store them.
//
// Each block takes one slice of one image's K outputs (a.parts slices an image). Launched as
// thread-block clusters (sm_90, the host's choice: then a cluster is an image, its blocks its
// slices), each block also computes every cluster-size-th squeeze output and reads the others
// from its peers' shared memory, so that each reads only its share of W1; otherwise (a
// cluster of one) each block computes the image's whole squeeze itself. Threads in groups of
// 32 run along C (8 channels a load where C allows), each group a set of squeeze outputs; the
// 32 lanes' sums meet in shared memory. Then one thread an excitation output, over its row of
// W2.
#define KILN_SE_THREADS 256
#define KILN_SE_GROUPS (KILN_SE_THREADS / 32)
#define KILN_SE_MAX_C 2048  // src/ops.rs refuses more (SQUEEZE_EXCITE_MAX_C)
#define KILN_SE_MAX_S 256   // likewise (SQUEEZE_EXCITE_MAX_S)
#define KILN_SE_OUTPUTS 8   // squeeze outputs a group sums at once

// v as the element type would store it.
static __device__ KILN_INLINE float kiln_se_round(float v) {
  kiln_t t;
  kiln_op_store(&t, 0, v);
  return kiln_op_load(&t, 0);
}

static __device__ KILN_INLINE kiln_u32 kiln_se_align16(kiln_u32 bytes) { return (bytes + 15u) & ~15u; }

// The block's rank in its cluster and the cluster's size (0 and 1 without clusters).
static __device__ KILN_INLINE void kiln_se_cluster(kiln_u32& rank, kiln_u32& ranks) {
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
#else
  rank = 0;
  ranks = 1;
#endif
}

// Every thread of the cluster's blocks: shared-memory writes before it visible to the peers'
// reads after it. A block barrier without clusters.
static __device__ KILN_INLINE void kiln_se_cluster_sync(kiln_u32 ranks) {
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  if (ranks > 1) {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    return;
  }
#endif
  __syncthreads();
}

// The float at `p` (this block's shared memory) in block `rank` of the cluster.
static __device__ KILN_INLINE float kiln_se_peer(const float* p, kiln_u32 rank) {
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  kiln_u32 local, remote;
  float v;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(local) : "l"(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  (void)rank;
  return *p;
#endif
}

extern "C" __global__ void kiln_squeeze_excite(const kiln_t* __restrict__ src, const kiln_t* __restrict__ params,
                                               kiln_t* __restrict__ y, KilnOpArgs a) {
  __shared__ float pooled[KILN_SE_MAX_C];
  __shared__ float red[KILN_SE_MAX_S * 32];
  __shared__ float squeezed[KILN_SE_MAX_S];
  const kiln_u32 c = a.c, s = a.squeeze, k = a.out_c, parts = a.parts, tid = threadIdx.x;
  const char* base = (const char*)params;
  const float* b1 = (const float*)base;
  const float* b2 = b1 + s;
  const kiln_u32 w1_at = kiln_se_align16((s + k) * 4u);
  const kiln_u32 w2_at = w1_at + kiln_se_align16(s * c * (kiln_u32)sizeof(kiln_t));
  const kiln_t* w1 = (const kiln_t*)(base + w1_at);
  const kiln_t* w2 = (const kiln_t*)(base + w2_at);
  kiln_u32 rank, ranks;
  kiln_se_cluster(rank, ranks);
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 900
  // The parameters are no kernel's output: the first image's blocks request them into L2
  // before the wait, each a share, so that their first loads' latency passes under the
  // previous kernel's tail.
  if (blockIdx.x < parts) {
    const kiln_u32 lines = (w2_at + s * k * (kiln_u32)sizeof(kiln_t) + 127u) / 128u;
    for (kiln_u32 l = blockIdx.x * KILN_SE_THREADS + tid; l < lines; l += parts * KILN_SE_THREADS)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(base + (kiln_u64)l * 128u));
  }
#endif
  kiln_pdl_start();
  const kiln_u32 group = tid / 32, lane = tid % 32;
  // This block's squeeze outputs: rank, rank + ranks, ...
  const kiln_u32 mine = s > rank ? (s - rank + ranks - 1) / ranks : 0;
  const float inv = 1.0f / ((float)a.in_h * (float)a.in_w);
  const kiln_u32 span = (k + parts - 1) / parts;
  for (kiln_u32 blk = blockIdx.x; blk < (kiln_u32)a.n * parts; blk += a.grid_threads / KILN_SE_THREADS) {
    const kiln_u32 n = blk / parts, part = blk % parts;
    // The image's pooled channels.
    for (kiln_u32 ch = tid; ch < c; ch += KILN_SE_THREADS) {
      if (a.mode == 1) {
        const kiln_u64 strips = (kiln_u32)a.strips, per = (kiln_u32)a.strip_group, slots = (kiln_u32)a.splits;
        const kiln_u64 count = ((n + 1) * strips - 1) / per - n * strips / per + 1;
        float t = 0.0f;
        for (kiln_u64 q = 0; q < count; ++q) t += ((const float*)src)[(n * slots + q) * c + ch];
        pooled[ch] = kiln_se_round(t * inv);
      } else {
        pooled[ch] = kiln_op_load(src, n * (kiln_u32)a.a_ld + ch);
      }
    }
    __syncthreads();
    // The squeeze: each group KILN_SE_OUTPUTS outputs at a time, its lanes along C.
    for (kiln_u32 j0 = group; j0 < mine; j0 += KILN_SE_GROUPS * KILN_SE_OUTPUTS) {
      float acc[KILN_SE_OUTPUTS];
#pragma unroll
      for (int q = 0; q < KILN_SE_OUTPUTS; ++q) acc[q] = 0.0f;
      if (c % 8 == 0) {
#pragma unroll 2
        for (kiln_u32 ch = lane * 8; ch < c; ch += 32 * 8) {
          float wv[KILN_SE_OUTPUTS][8];
#pragma unroll
          for (int q = 0; q < KILN_SE_OUTPUTS; ++q) {
            const kiln_u32 jl = j0 + q * KILN_SE_GROUPS, j = rank + jl * ranks;
            if (jl < mine) {
              kiln_loadv<8>(w1, j * c + ch, wv[q]);
            } else {
#pragma unroll
              for (int e = 0; e < 8; ++e) wv[q][e] = 0.0f;
            }
          }
#pragma unroll
          for (int q = 0; q < KILN_SE_OUTPUTS; ++q)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[q] += pooled[ch + e] * wv[q][e];
        }
      } else {
        for (kiln_u32 ch = lane; ch < c; ch += 32) {
          const float p = pooled[ch];
#pragma unroll
          for (int q = 0; q < KILN_SE_OUTPUTS; ++q) {
            const kiln_u32 jl = j0 + q * KILN_SE_GROUPS, j = rank + jl * ranks;
            if (jl < mine) acc[q] += p * kiln_op_load(w1, j * c + ch);
          }
        }
      }
#pragma unroll
      for (int q = 0; q < KILN_SE_OUTPUTS; ++q) {
        const kiln_u32 jl = j0 + q * KILN_SE_GROUPS;
        if (jl < mine) red[jl * 32 + lane] = acc[q];
      }
    }
    __syncthreads();
    for (kiln_u32 jl = tid; jl < mine; jl += KILN_SE_THREADS) {
      const kiln_u32 j = rank + jl * ranks;
      float t = b1[j];
      for (int l = 0; l < 32; ++l) t += red[jl * 32 + l];
      if (a.squeeze_act != KILN_ACT_IDENTITY)
        t = kiln_act_apply(t, kiln_act_params(a.squeeze_act, a.squeeze_act_a));
      squeezed[j] = kiln_se_round(t);
    }
    kiln_se_cluster_sync(ranks);
    if (ranks > 1) {
      // The peers' outputs, each from the block that computed it (which overwrites none of
      // them before the cluster's barrier at the end of this image).
      for (kiln_u32 j = tid; j < s; j += KILN_SE_THREADS)
        if (j % ranks != rank) squeezed[j] = kiln_se_peer(&squeezed[j], j % ranks);
      __syncthreads();
    }
    // The excitation: a thread an output of this block's slice, its row of W2 read 8
    // elements a load where S allows (every load of a row independent: one wait).
    const kiln_u32 k_end = (part + 1) * span < k ? (part + 1) * span : k;
    for (kiln_u32 o = part * span + tid; o < k_end; o += KILN_SE_THREADS) {
      float t = b2[o];
      if (s % 8 == 0) {
#pragma unroll 8
        for (kiln_u32 j = 0; j < s; j += 8) {
          float wv[8];
          kiln_loadv<8>(w2, o * s + j, wv);
#pragma unroll
          for (int e = 0; e < 8; ++e) t += squeezed[j + e] * wv[e];
        }
      } else {
#pragma unroll 8
        for (kiln_u32 j = 0; j < s; ++j) t += squeezed[j] * kiln_op_load(w2, o * s + j);
      }
      kiln_op_store(y, n * k + o, kiln_op_act(t, a));
    }
    // The next image's pass overwrites the shared arrays (the peers' reads included).
    kiln_se_cluster_sync(ranks);
  }
}

// An inverted residual's expansion and depthwise layer in one kernel: y = act(dw(e) + b2) with
// e = act_e(W1 x + b1), a 1x1 layer C -> E and a depthwise S x S layer at stride 1 or 2 with
// "same" padding (S / 2), NHWC. Unfused, the expansion writes e (E channels, 4-6 times x's)
// and the depthwise layer reads it back: at MobileNetV2's 112x112 and 56x56 stages that
// tensor's round trip is most of both layers' time. Here a block computes e for its output
// tile's input patch into shared memory (the patch's halo computed twice, by both
// neighbours) and runs the depthwise layer from there. e is rounded to the element type, as
// the unfused expansion stores it; zero outside the image (the depthwise layer's padding).
// b holds the parameters, packed by the host (src/ops.rs, `ExpandDepthwise::pack`): the
// biases b1 [E] and b2 [E] in FP32, then W1 [E][C] and W2 [E][S][S] in the element type, each
// part 16-byte aligned.
//
// A block is one image's tile of tile_h x tile_w output pixels and 32 of the E channels
// (slices fastest, so a tile's blocks read the same input patch out of L2). Threads are 8
// channel quads x 32 pixel lanes: the expansion takes a lane's pixels (up to 5) x the quad's 4
// channels, reading each input quad and weight quad once for 4-20 products; the depthwise
// layer a lane's output pixels x the quad.
#define KILN_XD_MAX_C 32     // src/ops.rs refuses more (EXPAND_DEPTHWISE_MAX_C)
#define KILN_XD_SLICE 32     // expanded channels a block
#define KILN_XD_PIXELS 160   // input-patch pixels a block (EXPAND_DEPTHWISE_PIXELS)
#define KILN_XD_QUADS (KILN_XD_SLICE / 4)
#define KILN_XD_LANES (KILN_SE_THREADS / KILN_XD_QUADS)
#define KILN_XD_PER (KILN_XD_PIXELS / KILN_XD_LANES)

struct __attribute__((aligned(16))) KilnF4 {
  float v[4];
};
struct __attribute__((aligned(4 * sizeof(kiln_t)))) KilnE4 {
  kiln_t e[4];
};

// Four consecutive elements (4-element aligned) as FP32, and back.
static __device__ KILN_INLINE KilnF4 kiln_xd_load4(const kiln_t* p) {
  const KilnE4 raw = *(const KilnE4*)p;
  KilnF4 f;
#pragma unroll
  for (int k = 0; k < 4; ++k) f.v[k] = kiln_op_load(raw.e, k);
  return f;
}
static __device__ KILN_INLINE void kiln_xd_store4(kiln_t* p, const KilnF4& f) {
  KilnE4 raw;
#pragma unroll
  for (int k = 0; k < 4; ++k) kiln_op_store(raw.e, k, f.v[k]);
  *(KilnE4*)p = raw;
}

// The block's shared memory (48,512 bytes: within every target's static limit).
struct KilnXdShared {
  KilnF4 xs[KILN_XD_PIXELS * KILN_XD_MAX_C / 4];  // the input patch, [pixel][channel quad]
  KilnF4 es[KILN_XD_PIXELS * KILN_XD_QUADS];      // its expansion, [pixel][slice quad]
  KilnF4 w1[KILN_XD_MAX_C * KILN_XD_QUADS];       // [input channel][slice quad]
  KilnF4 w2[25 * KILN_XD_QUADS];                  // [tap][slice quad], up to 5x5
  KilnF4 b1[KILN_XD_QUADS], b2[KILN_XD_QUADS];
};

// NVIDIA sm_80+ in FP16 and BF16 takes the expansion's products on tensor cores (mma.sync
// m16n8k16, FP32 sums): a warp an m16 tile of patch pixels by the slice's 32 channels. The patch
// and the slice's W1 rows then lie in shared memory as elements, rows of 32 channels padded by 16
// bytes (so the eight rows of a fragment fall in distinct banks), zero past C. On CUDA cores the
// products took most of the kernel's issue slots (4 outputs x 4 inputs a thread per step).
#if defined(__CUDACC_RTC__) && __CUDA_ARCH__ >= 800 && (defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16))
#define KILN_XD_MMA 1
#define KILN_XD_ROW_BYTES (KILN_XD_MAX_C * 2 + 16)
static __device__ KILN_INLINE void kiln_xd_mma(float (&d)[4], const kiln_u32 (&a)[4], kiln_u32 b0, kiln_u32 b1) {
#if defined(KILN_DTYPE_FP16)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
static __device__ KILN_INLINE kiln_u32 kiln_xd_word(const unsigned char* p) { return *(const kiln_u32*)p; }
#else
#define KILN_XD_MMA 0
#endif

// p / d for p < 2^16 and 0 < d < 2^16, with m = kiln_xd_magic(d) = ceil(2^32 / d): a multiply
// and a shift where a 32-bit division is a routine of about 20 instructions (exact: the
// rounding of m adds less than 2^-16 to p / d, whose fraction is at most 1 - 1/d).
static __device__ KILN_INLINE kiln_u64 kiln_xd_magic(kiln_u32 d) { return ((1ull << 32) + d - 1) / d; }
static __device__ KILN_INLINE kiln_u32 kiln_xd_div(kiln_u32 p, kiln_u64 m) { return (kiln_u32)((p * m) >> 32); }

template <int S>
static __device__ KILN_INLINE void kiln_expand_depthwise_body(const kiln_t* __restrict__ x,
                                                              const kiln_t* __restrict__ params,
                                                              kiln_t* __restrict__ y, const KilnOpArgs& a,
                                                              KilnXdShared& sh) {
  const kiln_u32 c = a.c, e = a.out_c, stride = a.stride_h, tid = threadIdx.x;
  const kiln_u32 th = a.tile_h, tw = a.tile_w, cq = c / 4;
  const kiln_u32 in_tw = (tw - 1) * stride + S, in_px = ((th - 1) * stride + S) * in_tw;
  const kiln_u64 in_tw_magic = kiln_xd_magic(in_tw), tw_magic = kiln_xd_magic(tw);
  const kiln_u32 tiles_h = (a.out_h + th - 1) / th, tiles_w = (a.out_w + tw - 1) / tw;
  const kiln_u32 slices = (e + KILN_XD_SLICE - 1) / KILN_XD_SLICE;
  const kiln_u32 total = (kiln_u32)a.n * tiles_h * tiles_w * slices;
  const char* base = (const char*)params;
  const float* b1 = (const float*)base;
  const float* b2 = b1 + e;
  const kiln_u32 w1_at = kiln_se_align16(2u * e * 4u);
  const kiln_u32 w2_at = w1_at + kiln_se_align16(e * c * (kiln_u32)sizeof(kiln_t));
  const kiln_t* w1 = (const kiln_t*)(base + w1_at);
  const kiln_t* w2 = (const kiln_t*)(base + w2_at);
  // Every phase maps a thread to the same quad of channels and to pixels lane, lane + 32, ...
  const kiln_u32 quad = tid % KILN_XD_QUADS, lane = tid / KILN_XD_QUADS;
  const KilnAct act_e = kiln_act_params(a.squeeze_act, a.squeeze_act_a);
  const KilnAct act = kiln_act_params(a.act, a.act_a);
  // This lane's patch pixels as rows and columns of the patch (the same in every tile).
  kiln_u32 prow[KILN_XD_PER], pcol[KILN_XD_PER];
#pragma unroll
  for (int j = 0; j < KILN_XD_PER; ++j) {
    const kiln_u32 p = lane + j * KILN_XD_LANES;
    prow[j] = kiln_xd_div(p, in_tw_magic);
    pcol[j] = p - prow[j] * in_tw;
  }
  kiln_u32 staged = slices;  // the slice whose weights are in shared memory (none yet)
  for (kiln_u32 blk = blockIdx.x; blk < total; blk += a.grid_threads / KILN_SE_THREADS) {
    const kiln_u32 slice = blk % slices;
    kiln_u32 rest = blk / slices;
    const kiln_u32 tx = rest % tiles_w;
    rest /= tiles_w;
    const kiln_u32 ty = rest % tiles_h, n = rest / tiles_h;
    const kiln_u32 ch0 = slice * KILN_XD_SLICE;
    if (slice != staged) {
      // The slice's weights and biases as FP32, zero past E. They are no kernel's output:
      // the first pass stages them before the wait for the previous kernel.
#if KILN_XD_MMA
      // [slice channel][input channel] as elements, zero past C and E.
      for (kiln_u32 i = tid; i < KILN_XD_SLICE * KILN_XD_MAX_C; i += KILN_SE_THREADS) {
        const kiln_u32 nn = i / KILN_XD_MAX_C, k = i % KILN_XD_MAX_C;
        const kiln_t zero = {};
        *(kiln_t*)((unsigned char*)sh.w1 + nn * KILN_XD_ROW_BYTES + k * 2) =
            k < c && ch0 + nn < e ? w1[(ch0 + nn) * c + k] : zero;
      }
#else
      for (kiln_u32 i = tid; i < c * KILN_XD_QUADS; i += KILN_SE_THREADS) {
        const kiln_u32 k = i / KILN_XD_QUADS, ch = ch0 + i % KILN_XD_QUADS * 4;
        KilnF4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j) w.v[j] = ch + j < e ? kiln_op_load(w1, (ch + j) * c + k) : 0.0f;
        sh.w1[i] = w;
      }
#endif
      for (kiln_u32 i = tid; i < S * S * KILN_XD_QUADS; i += KILN_SE_THREADS) {
        const kiln_u32 t = i / KILN_XD_QUADS, ch = ch0 + i % KILN_XD_QUADS * 4;
        KilnF4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j) w.v[j] = ch + j < e ? kiln_op_load(w2, (ch + j) * (S * S) + t) : 0.0f;
        sh.w2[i] = w;
      }
      if (tid < KILN_XD_QUADS) {
        KilnF4 p, q;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const kiln_u32 ch = ch0 + tid * 4 + j;
          p.v[j] = ch < e ? b1[ch] : 0.0f;
          q.v[j] = ch < e ? b2[ch] : 0.0f;
        }
        sh.b1[tid] = p;
        sh.b2[tid] = q;
      }
      if (staged == slices) kiln_pdl_start();
      staged = slice;
    }
    // The input patch, zero outside the image: this thread's quad of its pixels' channels.
    const kiln_i32 iy0 = (kiln_i32)(ty * th * stride) - a.pad_h;
    const kiln_i32 ix0 = (kiln_i32)(tx * tw * stride) - a.pad_w;
    bool inside[KILN_XD_PER];
#pragma unroll
    for (int j = 0; j < KILN_XD_PER; ++j) {
      const kiln_u32 p = lane + j * KILN_XD_LANES;
      const kiln_i32 iy = iy0 + (kiln_i32)prow[j], ix = ix0 + (kiln_i32)pcol[j];
      inside[j] = (kiln_u32)iy < (kiln_u32)a.in_h && (kiln_u32)ix < (kiln_u32)a.in_w;
      const kiln_t* src =
          x + ((n * (kiln_u32)a.in_h + (kiln_u32)iy) * (kiln_u32)a.in_w + (kiln_u32)ix) * (kiln_u32)a.a_ld + quad * 4;
#if KILN_XD_MMA
      // The elements as they are, every quad of the row (zero past C: the k16 steps read them).
      if (p < in_px) {
        KilnE4 v = {};
        if (inside[j] && quad < cq) v = *(const KilnE4*)src;
        *(KilnE4*)((unsigned char*)sh.xs + p * KILN_XD_ROW_BYTES + quad * 8) = v;
      }
#else
      if (p < in_px && quad < cq) {
        KilnF4 v = {{0.0f, 0.0f, 0.0f, 0.0f}};
        if (inside[j]) v = kiln_xd_load4(src);
        sh.xs[p * (KILN_XD_MAX_C / 4) + quad] = v;
      }
#endif
    }
    __syncthreads();
#if KILN_XD_MMA
    {
      // Warp w takes the patch's m16 tiles w, w + 8, ...: rows g and g + 8 of a tile, the
      // channel pairs 2t of each n8 tile (the accumulator's layout).
      const kiln_u32 warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
      const kiln_u32 ksteps = (c + 15) / 16;
      const unsigned char* xb = (const unsigned char*)sh.xs;
      const unsigned char* wb = (const unsigned char*)sh.w1;
      const float* b1f = (const float*)sh.b1;
      float* esf = (float*)sh.es;
      for (kiln_u32 mt = warp; mt * 16 < in_px; mt += KILN_SE_THREADS / 32) {
        float d[4][4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int q = 0; q < 4; ++q) d[nt][q] = 0.0f;
        for (kiln_u32 ks = 0; ks < ksteps; ++ks) {
          const unsigned char* r0 = xb + (mt * 16 + g) * KILN_XD_ROW_BYTES + ks * 32 + t * 4;
          const kiln_u32 af[4] = {kiln_xd_word(r0), kiln_xd_word(r0 + 8 * KILN_XD_ROW_BYTES), kiln_xd_word(r0 + 16),
                                  kiln_xd_word(r0 + 8 * KILN_XD_ROW_BYTES + 16)};
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const unsigned char* b = wb + (nt * 8 + g) * KILN_XD_ROW_BYTES + ks * 32 + t * 4;
            kiln_xd_mma(d[nt], af, kiln_xd_word(b), kiln_xd_word(b + 16));
          }
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const kiln_u32 p = mt * 16 + g + half * 8;
          if (p >= in_px) continue;
          const kiln_u32 row = kiln_xd_div(p, in_tw_magic), col = p - row * in_tw;
          const kiln_i32 iy = iy0 + (kiln_i32)row, ix = ix0 + (kiln_i32)col;
          const bool in = (kiln_u32)iy < (kiln_u32)a.in_h && (kiln_u32)ix < (kiln_u32)a.in_w;
          float v[8];
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            v[nt * 2] = d[nt][half * 2] + b1f[nt * 8 + t * 2];
            v[nt * 2 + 1] = d[nt][half * 2 + 1] + b1f[nt * 8 + t * 2 + 1];
          }
          kiln_act_each(v, act_e);
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            float2 o;
            o.x = in ? kiln_se_round(v[nt * 2]) : 0.0f;
            o.y = in ? kiln_se_round(v[nt * 2 + 1]) : 0.0f;
            *(float2*)(esf + p * KILN_XD_SLICE + nt * 8 + t * 2) = o;
          }
        }
      }
    }
    // Every warp's expansion in place before any thread's depthwise taps read it.
    __syncthreads();
#else
    // The expansion of this lane's patch pixels, the quad's 4 channels.
    float acc[KILN_XD_PER * 4];
#pragma unroll
    for (int i = 0; i < KILN_XD_PER * 4; ++i) acc[i] = 0.0f;
    for (kiln_u32 k4 = 0; k4 < cq; ++k4) {
      KilnF4 w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = sh.w1[(k4 * 4 + i) * KILN_XD_QUADS + quad];
#pragma unroll
      for (int j = 0; j < KILN_XD_PER; ++j) {
        const kiln_u32 p = lane + j * KILN_XD_LANES;
        if (p < in_px) {
          const KilnF4 xv = sh.xs[p * (KILN_XD_MAX_C / 4) + k4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[j * 4 + q] += xv.v[i] * w[i].v[q];
        }
      }
    }
    const KilnF4 bias1 = sh.b1[quad];
#pragma unroll
    for (int i = 0; i < KILN_XD_PER * 4; ++i) acc[i] += bias1.v[i % 4];
    kiln_act_each(acc, act_e);
#pragma unroll
    for (int j = 0; j < KILN_XD_PER; ++j) {
      const kiln_u32 p = lane + j * KILN_XD_LANES;
      if (p < in_px) {
        KilnF4 o;
#pragma unroll
        for (int q = 0; q < 4; ++q) o.v[q] = inside[j] ? kiln_se_round(acc[j * 4 + q]) : 0.0f;
        sh.es[p * KILN_XD_QUADS + quad] = o;
      }
    }
    __syncthreads();
#endif
    // The depthwise layer: this lane's output pixels of the tile, the quad's channels.
    const kiln_u32 ch = ch0 + quad * 4;
    const kiln_u32 oy0 = ty * th, ox0 = tx * tw;
    const KilnF4 bias2 = sh.b2[quad];
    for (kiln_u32 o = lane; o < th * tw; o += KILN_XD_LANES) {
      const kiln_u32 oy = kiln_xd_div(o, tw_magic), ox = o - oy * tw;
      if (oy0 + oy >= (kiln_u32)a.out_h || ox0 + ox >= (kiln_u32)a.out_w || ch >= e) continue;
      float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int fy = 0; fy < S; ++fy) {
        const kiln_u32 row = (oy * stride + fy) * in_tw + ox * stride;
#pragma unroll
        for (int fx = 0; fx < S; ++fx) {
          const KilnF4 ev = sh.es[(row + fx) * KILN_XD_QUADS + quad];
          const KilnF4 wv = sh.w2[(fy * S + fx) * KILN_XD_QUADS + quad];
#pragma unroll
          for (int q = 0; q < 4; ++q) r[q] += ev.v[q] * wv.v[q];
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) r[q] += bias2.v[q];
      kiln_act_each(r, act);
      KilnF4 out;
#pragma unroll
      for (int q = 0; q < 4; ++q) out.v[q] = r[q];
      kiln_xd_store4(y + ((n * (kiln_u32)a.out_h + oy0 + oy) * (kiln_u32)a.out_w + ox0 + ox) * (kiln_u32)a.y_ld + ch,
                     out);
    }
    // The next pass overwrites the patch, the expansion and perhaps the weights.
    __syncthreads();
  }
  if (staged == slices) kiln_pdl_start();  // a block with no pass still waits and releases
}

// NVIDIA: three blocks an SM (at most 80 registers a thread).
#if defined(__CUDACC_RTC__)
#define KILN_XD_BOUNDS __launch_bounds__(KILN_SE_THREADS, 3)
#else
#define KILN_XD_BOUNDS
#endif

extern "C" __global__ void KILN_XD_BOUNDS kiln_expand_depthwise(const kiln_t* __restrict__ x, const kiln_t* __restrict__ params,
                                                 kiln_t* __restrict__ y, KilnOpArgs a) {
  __shared__ KilnXdShared sh;
  if (a.win_h == 5) {
    kiln_expand_depthwise_body<5>(x, params, y, a, sh);
  } else {
    kiln_expand_depthwise_body<3>(x, params, y, a, sh);
  }
}
