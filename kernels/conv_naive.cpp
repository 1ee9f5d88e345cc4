// ConvDirectNaiveFwd: one thread per output element, FP32 accumulation. Valid for every
// forward problem kiln describes (2-D/3-D, channels first/last, groups, pad/stride/dilation):
// the universal fallback and the on-device reference.
#include "epilogue.h"

extern "C" __global__ void conv_naive_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                                          kiln_t* __restrict__ y, KilnConvArgs a,
                                          KilnEpilogue e) {
  const kiln_i64 total = (kiln_i64)a.n * a.k * a.out_d * a.out_h * a.out_w;
  const kiln_i64 idx = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  // Decode the output coordinate so that neighbouring threads write neighbouring addresses.
  kiln_i64 r = idx;
  kiln_i32 k, ow, oh, od, n;
  if (a.channels_last) {
    k = (kiln_i32)(r % a.k); r /= a.k;
    ow = (kiln_i32)(r % a.out_w); r /= a.out_w;
    oh = (kiln_i32)(r % a.out_h); r /= a.out_h;
    od = (kiln_i32)(r % a.out_d); r /= a.out_d;
    n = (kiln_i32)r;
  } else {
    ow = (kiln_i32)(r % a.out_w); r /= a.out_w;
    oh = (kiln_i32)(r % a.out_h); r /= a.out_h;
    od = (kiln_i32)(r % a.out_d); r /= a.out_d;
    k = (kiln_i32)(r % a.k); r /= a.k;
    n = (kiln_i32)r;
  }
  const kiln_i32 cpg = a.c / a.groups;  // input channels per group
  const kiln_i32 kpg = a.k / a.groups;  // output channels per group
  const kiln_i32 g = k / kpg;
  float acc = 0.0f;
  for (kiln_i32 cg = 0; cg < cpg; ++cg) {
    const kiln_i32 c = g * cpg + cg;
    for (kiln_i32 fd = 0; fd < a.fil_d; ++fd) {
      const kiln_i32 id = od * a.stride_d - a.pad_d + fd * a.dil_d;
      if (id < 0 || id >= a.in_d) continue;
      for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
        const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
        if (ih < 0 || ih >= a.in_h) continue;
        for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
          const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
          if (iw < 0 || iw >= a.in_w) continue;
          kiln_i64 xi, wi;
          if (a.channels_last) {
            xi = ((((kiln_i64)n * a.in_d + id) * a.in_h + ih) * a.in_w + iw) * a.c + c;
            wi = ((((kiln_i64)k * a.fil_d + fd) * a.fil_h + fy) * a.fil_w + fx) * cpg + cg;
          } else {
            xi = ((((kiln_i64)n * a.c + c) * a.in_d + id) * a.in_h + ih) * a.in_w + iw;
            wi = ((((kiln_i64)k * cpg + cg) * a.fil_d + fd) * a.fil_h + fy) * a.fil_w + fx;
          }
          acc += kiln_load(x, xi) * kiln_load(w, wi);
        }
      }
    }
  }
  if (a.channels_last)
    kiln_store_nhwc(y, idx / a.k, k, acc, e);
  else
    kiln_store_nchw(y, idx, k, acc, e);
}
