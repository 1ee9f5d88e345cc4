// epilogue.h: the fused epilogue every kiln convolution kernel applies to its FP32 sums before
// rounding once into y:
//
//   y[p, k] = act(alpha * acc[p, k] * scale[k] + bias[k] + beta * z[p, k])
//
// scale and bias are per output channel, FP32 (a batch norm folded at plan time); z is a
// residual in y's element type and shape; act is chosen at run time (one compiled variant
// serves every activation: a uniform branch per element, no cost measurable against the
// memory traffic of the store). A plain convolution passes alpha 1, no tensors, identity:
// the result is bit for bit the unfused one.
//
// Channels-last outputs may be a channel slice of a wider tensor: pixel p's channels start at
// p * y_ld (y_ld >= K), so a concatenation costs no copy; z likewise with z_ld. Channels-first
// outputs are dense (y_ld = z_ld = K, checked by the host).
//
// Mirrored by kiln_format::abi::Epilogue; a test reads this struct and checks the mirror.
#pragma once
#include "kiln_gpu.h"

typedef unsigned long long kiln_u64;

// Activation codes (kiln_format::Activation's discriminants).
#define KILN_ACT_IDENTITY 0
#define KILN_ACT_RELU 1
#define KILN_ACT_CLIPPED_RELU 2  // min(max(v, 0), act_a): ReLU6 with act_a = 6
#define KILN_ACT_LEAKY_RELU 3    // v >= 0 ? v : act_a * v
#define KILN_ACT_SILU 4          // v * sigmoid(v)
#define KILN_ACT_SIGMOID 5
#define KILN_ACT_TANH 6
#define KILN_ACT_GELU_TANH 7     // 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
#define KILN_ACT_HARD_SWISH 8    // v * min(max(v + 3, 0), 6) / 6
#define KILN_ACT_HARD_SIGMOID 9  // min(max(v + 3, 0), 6) / 6

struct KilnEpilogue {
  kiln_u64 scale;     // const float[K], or 0 (1)
  kiln_u64 bias;      // const float[K], or 0 (0)
  kiln_u64 z;         // residual, y's element type and layout, or 0 (none)
  float alpha, beta;  // the sums' and the residual's factors
  float act_a;        // the activation's parameter (clip ceiling, leaky slope)
  kiln_i32 act;       // KILN_ACT_*
  kiln_i32 y_ld;      // elements from one output pixel to the next (channels-last), >= K
  kiln_i32 z_ld;      // the same for z
  kiln_u64 pool;      // float partial sums of y's channels for a global pool, or 0 (none;
                      // only the depthwise kernel writes them: src/solvers/depthwise.rs)
  kiln_u64 x_scale;   // x's gate s[N][C] (x's type), multiplied in as x is read, or 0 (a
                      // prologue; only the Hopper kernels take it: src/solvers/wgmma.rs)
};

// 2^v: the hardware's approximation (one instruction on both vendors; relative error about
// 2^-22, well inside FP16/BF16 rounding and the FP32 tolerance of kiln's checks).
static __device__ KILN_INLINE float kiln_exp2(float v) {
#if defined(KILN_AMD_RAW)
  return __builtin_amdgcn_exp2f(v);
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
#endif
}

// 1 / v: the hardware's approximation (one instruction, at most 1 ulp off; 1 / inf = 0). An
// IEEE division is a dozen instructions and a slow-path call, which in the Hopper kernels'
// unrolled epilogues made a SiLU layer take 1.7x its ReLU6 time.
static __device__ KILN_INLINE float kiln_rcp(float v) {
#if defined(KILN_AMD_RAW)
  return __builtin_amdgcn_rcpf(v);
#else
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
#endif
}

// 1 / (1 + e^-v): exactly 0 far below, 1 within an ulp far above.
static __device__ KILN_INLINE float kiln_sigmoid(float v) {
  return kiln_rcp(1.0f + kiln_exp2(-1.4426950408889634f * v));
}

static __device__ KILN_INLINE float kiln_clamp(float v, float lo, float hi) {
  // NaN passes through (comparisons with NaN are false), as PyTorch's activations do.
  return v < lo ? lo : (v > hi ? hi : v);
}

// Every activation is one of three straight-line forms, so that an unrolled epilogue carries
// one short sequence per element instead of ten cases (a switch per element tripled the Hopper
// kernels' code):
//   sigmoid form: t = q * sigmoid(v * (p1 + p3 v^2)) + r   (sigmoid, tanh, SiLU, GELU)
//   clamp form:   t = clamp(m v + b, lo, hi)                (identity, ReLU, ReLU6, hard-*)
//   leaky form:   t = v < 0 ? m : 1
// and the result is v * t where use_v is set, else t. The form and its coefficients depend on
// the activation only: computed once per thread (the compiler shares them across elements).
struct KilnAct {
  kiln_i32 form, use_v;  // form: 0 clamp, 1 sigmoid, 2 leaky
  float m, b, lo, hi, p1, p3, q, r;
};

static __device__ KILN_INLINE KilnAct kiln_act_params(kiln_i32 act, float a) {
  const float inf = kiln_bits_to_float(0x7f800000u);
  KilnAct c = {0, 0, 1.0f, 0.0f, -inf, inf, 1.0f, 0.0f, 1.0f, 0.0f};
  switch (act) {
    case KILN_ACT_RELU: c.lo = 0.0f; break;
    case KILN_ACT_CLIPPED_RELU: c.lo = 0.0f; c.hi = a; break;
    case KILN_ACT_LEAKY_RELU: c.form = 2; c.use_v = 1; c.m = a; break;
    case KILN_ACT_SILU: c.form = 1; c.use_v = 1; break;
    case KILN_ACT_SIGMOID: c.form = 1; break;
    case KILN_ACT_TANH: c.form = 1; c.p1 = 2.0f; c.q = 2.0f; c.r = -1.0f; break;
    // 0.5 (1 + tanh u) = sigmoid(2u), u = sqrt(2/pi) (v + 0.044715 v^3).
    case KILN_ACT_GELU_TANH: c.form = 1; c.use_v = 1; c.p1 = 1.5957691216057308f; c.p3 = 0.07135481627f; break;
    case KILN_ACT_HARD_SWISH: c.use_v = 1; /* fall through */
    case KILN_ACT_HARD_SIGMOID: c.m = 1.0f / 6.0f; c.b = 0.5f; c.lo = 0.0f; c.hi = 1.0f; break;
    default: break;
  }
  return c;
}

static __device__ KILN_INLINE float kiln_act_apply(float v, const KilnAct& c) {
  float t;
  if (c.form == 1) {
    // v^2 only where the cubic term exists: 0 * inf would turn +-inf into NaN.
    const float v2 = c.p3 == 0.0f ? 0.0f : v * v;
    t = c.q * kiln_sigmoid(v * (c.p1 + c.p3 * v2)) + c.r;
  } else if (c.form == 2) {
    t = v < 0.0f ? c.m : 1.0f;
  } else {
    t = kiln_clamp(c.m * v + c.b, c.lo, c.hi);
  }
  return c.use_v ? v * t : t;
}

// min(max(v, lo), hi), NaN passed through as kiln_clamp does: on NVIDIA two instructions
// (max.NaN, min.NaN) where kiln_clamp's compare-and-select form costs four.
static __device__ KILN_INLINE float kiln_clamp_nan(float v, float lo, float hi) {
#if defined(__CUDACC_RTC__)
  float r;
  asm("{.reg .f32 t; max.NaN.f32 t, %1, %2; min.NaN.f32 %0, t, %3;}"
      : "=f"(r)
      : "f"(v), "f"(lo), "f"(hi));
  return r;
#else
  return kiln_clamp(v, lo, hi);
#endif
}

// kiln_act_apply on N values, with the form and whether t multiplies v fixed at compile time.
// FORM 3 is the sigmoid form without its cubic term (every activation of that form but GELU),
// whose exponent is one product, v * (-p1 / ln 2).
template <int FORM, bool USE_V, int N>
static __device__ KILN_INLINE void kiln_act_each_of(float (&r)[N], const KilnAct& c) {
  const float exp2_per_v = -1.4426950408889634f * c.p1;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const float v = r[j];
    float t;
    if (FORM == 1) {
      const float v2 = c.p3 == 0.0f ? 0.0f : v * v;  // 0 * inf would make +-inf NaN
      const float u = v * (c.p1 + c.p3 * v2);
      t = c.q * kiln_sigmoid(u) + c.r;
    } else if (FORM == 3) {
      t = c.q * kiln_rcp(1.0f + kiln_exp2(exp2_per_v * v)) + c.r;
    } else if (FORM == 2) {
      t = v < 0.0f ? c.m : 1.0f;
    } else {
      t = kiln_clamp_nan(c.m * v + c.b, c.lo, c.hi);
    }
    r[j] = USE_V ? v * t : t;
  }
}

// The activation on N values (a pixel's channel vector), its case chosen once for all of them
// (uniform branches): kiln_act_apply per element branches per element, and predicated off, the
// other cases' instructions would still take issue slots.
template <int N>
static __device__ KILN_INLINE void kiln_act_each(float (&r)[N], const KilnAct& c) {
  if (c.form == 1 && c.p3 == 0.0f) {
    if (c.use_v) kiln_act_each_of<3, true>(r, c); else kiln_act_each_of<3, false>(r, c);
  } else if (c.form == 1) {
    kiln_act_each_of<1, true>(r, c);  // GELU, the one sigmoid form with a cubic term
  } else if (c.form == 2) {
    kiln_act_each_of<2, true>(r, c);  // the leaky form always multiplies v
  } else {
    if (c.use_v) kiln_act_each_of<0, true>(r, c); else kiln_act_each_of<0, false>(r, c);
  }
}

// Read-only loads of the epilogue's inputs. On NVIDIA through the non-coherent path: it
// also tells the compiler these loads cannot alias a kernel's accumulator array (a plain
// generic load could, which moved the Hopper kernels' accumulators to local memory).
#if defined(__CUDACC_RTC__)
static __device__ KILN_INLINE float kiln_ep_f32(kiln_u64 p, kiln_i64 i) { return __ldg((const float*)p + i); }
static __device__ KILN_INLINE float kiln_ep_z(kiln_u64 p, kiln_i64 i) {
  const kiln_t v = __ldg((const kiln_t*)p + i);
  return kiln_load(&v, 0);
}
#else
static __device__ KILN_INLINE float kiln_ep_f32(kiln_u64 p, kiln_i64 i) { return ((const float*)p)[i]; }
static __device__ KILN_INLINE float kiln_ep_z(kiln_u64 p, kiln_i64 i) { return kiln_load((const kiln_t*)p, i); }
#endif

// Output channel k's value from its FP32 sum; zi is the residual's element index. (Not written
// as kiln_epilogue_of over loaded inputs: taking the activation's coefficients before the
// identity test changed most kernels' code, and made gfx9's implicit GEMM spill scalar
// registers.)
static __device__ KILN_INLINE float kiln_epilogue(float acc, kiln_i32 k, kiln_i64 zi, const KilnEpilogue& e) {
  float v = acc * e.alpha;
  if (e.scale) v *= kiln_ep_f32(e.scale, k);
  if (e.bias) v += kiln_ep_f32(e.bias, k);
  if (e.z) v += e.beta * kiln_ep_z(e.z, zi);
  if (e.act == KILN_ACT_IDENTITY) return v;  // exactly v (m v + b would turn -0 into +0)
  return kiln_act_apply(v, kiln_act_params(e.act, e.act_a));
}

// kiln_epilogue on inputs already loaded: scale_k and bias_k (used only where e has them), the
// residual's value z_v (where e has one), the activation's coefficients. For kernels that read
// a channel's scale and bias once for many pixels, or two channels' residuals in one word.
static __device__ KILN_INLINE float kiln_epilogue_of(float acc, float scale_k, float bias_k,
                                                     float z_v, const KilnEpilogue& e,
                                                     const KilnAct& act) {
  float v = acc * e.alpha;
  if (e.scale) v *= scale_k;
  if (e.bias) v += bias_k;
  if (e.z) v += e.beta * z_v;
  if (e.act == KILN_ACT_IDENTITY) return v;  // exactly v (m v + b would turn -0 into +0)
  return kiln_act_apply(v, act);
}

// Channels-last: the sum of pixel p (flattened n, d, h, w) and channel k, stored into y.
static __device__ KILN_INLINE void kiln_store_nhwc(kiln_t* y, kiln_i64 p, kiln_i32 k, float acc,
                                                   const KilnEpilogue& e) {
  kiln_store(y, p * e.y_ld + k, kiln_epilogue(acc, k, p * e.z_ld + k, e));
}

// Channels-first (dense y and z): element yi of channel k.
static __device__ KILN_INLINE void kiln_store_nchw(kiln_t* y, kiln_i64 yi, kiln_i32 k, float acc,
                                                   const KilnEpilogue& e) {
  kiln_store(y, yi, kiln_epilogue(acc, k, yi, e));
}
