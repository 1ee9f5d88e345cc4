#!/usr/bin/env python3
"""The accuracy of silu-pair-reciprocal.patch's SiLU, emulated in float32 with numpy (ex2 and
rcp modelled as correctly rounded: the hardware's are within 2^-22 and 1 ulp), against float64
and against the current two-instruction form, over 5 million values (a dense grid on [-60, 60],
normal values, and IEEE specials), each paired with a random neighbour.

    PYTHONPATH=$HOME/.cache/kiln-tools/onnx-wheels python3 benches/pending/silu_pair_accuracy.py

Prints the class mismatches (NaN, +-inf, finite) against float64, the largest relative error
where |silu| > 1e-12 (both forms), and the share of FP16 results that differ from the current
form's. Exits non-zero if the pair form is less accurate than the current one by more than 2x
or any class differs.
"""
import sys

import numpy as np

f32 = np.float32
np.seterr(all="ignore")
L2E = f32(1.4426950408889634)
CAP = f32(2.0**63)


def ex2(x):
    return np.exp2(x.astype(np.float64)).astype(f32)


def rcp(x):
    return (1 / x.astype(np.float64)).astype(f32)


def silu_pair(v0, v1):
    d0, d1 = f32(1) + ex2(-L2E * v0), f32(1) + ex2(-L2E * v1)
    in0, in1 = d0 < CAP, d1 < CAP
    c0, c1 = np.where(in0, d0, CAP), np.where(in1, d1, CAP)
    r = rcp(c0 * c1)
    return v0 * np.where(in0, r * c1, f32(0)), v1 * np.where(in1, r * c0, f32(0))


def silu_current(v):
    return v * rcp(f32(1) + ex2(-L2E * v))


def main():
    rng = np.random.default_rng(1)
    specials = [np.inf, -np.inf, np.nan, 0, -0.0, 1e-40, -3e-39, 1e37, -2e37, -44, -100, 88, -88, -89]
    v = np.concatenate([
        np.linspace(-60, 60, 4_000_000, dtype=f32),
        (rng.standard_normal(1_000_000) * 8).astype(f32),
        np.array(specials, dtype=f32),
    ])
    v = v[rng.permutation(len(v))][: len(v) // 2 * 2]
    y = np.empty_like(v)
    y[0::2], y[1::2] = silu_pair(v[0::2], v[1::2])
    cur = silu_current(v)
    ref = v.astype(np.float64) / (1 + np.exp(-v.astype(np.float64)))

    def cls(t):
        return np.where(np.isnan(t), 0, np.where(t == np.inf, 1, np.where(t == -np.inf, 2, 3)))

    mismatches = int((cls(y.astype(np.float64)) != cls(ref)).sum())
    m = np.isfinite(ref) & np.isfinite(y) & (np.abs(ref) > 1e-12)
    rel_pair = float((np.abs(y[m] - ref[m]) / np.abs(ref[m])).max())
    rel_cur = float((np.abs(cur[m] - ref[m]) / np.abs(ref[m])).max())
    h, hc = y.astype(np.float16), cur.astype(np.float16)
    same = (h == hc) | (np.isnan(h) & np.isnan(hc))
    print(f"class mismatches against float64: {mismatches}")
    print(f"largest relative error, |silu| > 1e-12: pair {rel_pair:.3e}, current {rel_cur:.3e}")
    print(f"FP16 results that differ from the current form's: {int((~same).sum())} of {len(v)}")
    return 0 if mismatches == 0 and rel_pair <= 2 * rel_cur else 1


if __name__ == "__main__":
    sys.exit(main())
