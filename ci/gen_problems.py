#!/usr/bin/env python3
"""Writes kiln's problem lists from network definitions: every Conv2d a forward pass runs, as
MIOpen find-db keys, at batch 1 and 32, FP32 and FP16, NCHW and NHWC, and BF16 NHWC. Runs where PyTorch and
torchvision are installed (on a machine with the GPU): no shape is typed by hand. ResNet-50,
MobileNetV2 and MobileNetV3-Large's squeeze-and-excitation layers come from torchvision; the VAE-style decoder and the YOLO-style detector are built
below from their usual blocks. Usage: gen_problems.py OUT_DIR [--held-out]

--held-out writes, instead, FP16 NHWC lists of torchvision networks that are in none of kiln's
lists (DenseNet-121, EfficientNet-B0, GoogLeNet): what the fallback is measured on without
re-tuning (benches only; never committed under ci/problems).

--depthwise-unseen writes depthwise.txt: the depthwise layers (FP16 NHWC, N=1 and 32) of seven
torchvision networks whose depthwise layers no kiln list holds (MNASNet, ShuffleNetV2,
MobileNetV3 large and small, EfficientNet-B3 at 300 px, EfficientNetV2-S at 384 px, ConvNeXt-T):
the depthwise kernels against cuDNN off the tuned lists (benches only).

--grouped-unseen writes grouped.txt: the grouped, not depthwise, layers (FP16 NHWC, N=1 and 32)
of eight torchvision networks no kiln list holds (ResNeXt-50 32x4d, ResNeXt-101 32x8d and 64x4d,
RegNetY 400MF / 800MF / 1.6GF, RegNetX 400MF / 3.2GF): the grouped kernels against cuDNN off the
tuned lists (benches only).

--video-unseen writes video.txt: the 3-D layers (FP16 NDHWC, N=1 and 32) of five torchvision
video networks no kiln list holds (R3D-18, MC3-18 and R(2+1)D-18 on 16 frames of 112x112, S3D
and Swin3D-T on 16 frames of 224x224): the 3-D kernels against cuDNN off the tuned lists
(benches only)."""
import sys

import torch
import torch.nn as nn
import torchvision


def conv(c, k, f=3, s=1, g=1):
    return nn.Sequential(nn.Conv2d(c, k, f, s, f // 2, groups=g, bias=False), nn.BatchNorm2d(k), nn.SiLU())


class ResBlock(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.a = nn.Conv2d(c, k, 3, 1, 1)
        self.b = nn.Conv2d(k, k, 3, 1, 1)
        self.skip = nn.Conv2d(c, k, 1) if c != k else nn.Identity()

    def forward(self, x):
        return self.skip(x) + self.b(torch.relu(self.a(torch.relu(x))))


class VaeDecoder(nn.Module):
    """Stable-Diffusion-style VAE decoder (latent 4 channels), narrowed: 256/256/128/64."""

    def __init__(self, widths=(256, 256, 128, 64)):
        super().__init__()
        layers = [nn.Conv2d(4, widths[0], 3, 1, 1), ResBlock(widths[0], widths[0])]
        c = widths[0]
        for i, k in enumerate(widths):
            layers += [ResBlock(c, k), ResBlock(k, k)]
            c = k
            if i < len(widths) - 1:
                layers += [nn.Upsample(scale_factor=2.0), nn.Conv2d(c, c, 3, 1, 1)]
        layers += [nn.Conv2d(c, 3, 3, 1, 1)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class C3(nn.Module):
    """YOLOv5's CSP bottleneck block."""

    def __init__(self, c, k, n=1):
        super().__init__()
        h = k // 2
        self.cv1, self.cv2, self.cv3 = conv(c, h, 1), conv(c, h, 1), conv(2 * h, k, 1)
        self.m = nn.Sequential(*[nn.Sequential(conv(h, h, 1), conv(h, h, 3)) for _ in range(n)])

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class YoloDetector(nn.Module):
    """YOLOv5s-style backbone + detection heads (80 classes, 3 anchors)."""

    def __init__(self):
        super().__init__()
        self.stem = conv(3, 32, 6, 2)
        self.s1 = nn.Sequential(conv(32, 64, 3, 2), C3(64, 64, 1))
        self.s2 = nn.Sequential(conv(64, 128, 3, 2), C3(128, 128, 2))
        self.s3 = nn.Sequential(conv(128, 256, 3, 2), C3(256, 256, 3))
        self.s4 = nn.Sequential(conv(256, 512, 3, 2), C3(512, 512, 1), conv(512, 512, 1))
        self.heads = nn.ModuleList(nn.Conv2d(c, 3 * 85, 1) for c in (128, 256, 512))

    def forward(self, x):
        p3 = self.s2(self.s1(self.stem(x)))
        p4 = self.s3(p3)
        p5 = self.s4(p4)
        return [h(p) for h, p in zip(self.heads, (p3, p4, p5))]


NETWORKS = {
    "resnet50": (lambda: torchvision.models.resnet50(), (3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (3, 224, 224)),
    "vae_decoder": (lambda: VaeDecoder(), (4, 16, 16)),
    "yolo_detector": (lambda: YoloDetector(), (3, 320, 320)),
    # Only the squeeze-and-excitation layers (1x1 convolutions on pooled 1x1 maps) of
    # MobileNetV3-Large: the family of layers kiln's other lists lack.
    "mobilenet_v3_se": (lambda: torchvision.models.mobilenet_v3_large(), (3, 224, 224)),
}
# Networks of which a list keeps only some layers: name -> which (a shape predicate).
ONLY = {"mobilenet_v3_se": lambda s: s[1] == 1 and s[2] == 1}


def shapes(model, input_chw):
    seen = []

    def hook(mod, inp, out):
        x = inp[0]
        s = (mod.in_channels, x.shape[2], x.shape[3], mod.kernel_size, mod.out_channels,
             out.shape[2], out.shape[3], mod.padding, mod.stride, mod.dilation, mod.groups)
        if s not in seen:
            seen.append(s)

    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model.eval()(torch.zeros(1, *input_chw))
    return seen


def shapes3d(model, input_cdhw):
    """Every distinct Conv3d of a forward pass: (c, dhw, filter, k, out dhw, pad, stride,
    dilation, groups)."""
    seen = []

    def hook(mod, inp, out):
        s = (mod.in_channels, tuple(inp[0].shape[2:]), mod.kernel_size, mod.out_channels,
             tuple(out.shape[2:]), mod.padding, mod.stride, mod.dilation, mod.groups)
        if s not in seen:
            seen.append(s)

    for m in model.modules():
        if isinstance(m, nn.Conv3d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model.eval()(torch.zeros(1, *input_cdhw))
    return seen


def key3d(s, n, dtype):
    """A 3-D find-db key: C-D-H-W-TxRxS-K-Z-P-Q-N-pads-strides-dilations-0-layouts-type-F."""
    c, dhw, f, k, out, p, st, d, g = s
    x = lambda v: "x".join(str(i) for i in v)
    return (f"{c}-{x(dhw).replace('x', '-')}-{x(f)}-{k}-{x(out).replace('x', '-')}-{n}-{x(p)}-"
            f"{x(st)}-{x(d)}-0-NDHWC-NDHWC-NDHWC-{dtype}-F" + (f"_g{g}" if g != 1 else ""))


def key(s, n, dtype, layout):
    c, h, w, f, k, ho, wo, p, st, d, g = s
    lay = "NCHW" if layout == "NCHW" else "NHWC-NHWC-NHWC"
    out = (f"{c}-{h}-{w}-{f[0]}x{f[1]}-{k}-{ho}-{wo}-{n}-{p[0]}x{p[1]}-{st[0]}x{st[1]}-"
           f"{d[0]}x{d[1]}-0-{lay}-{dtype}-F")
    return out + (f"_g{g}" if g != 1 else "")


HELD_OUT = {
    "densenet121": (lambda: torchvision.models.densenet121(), (3, 224, 224)),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(), (3, 224, 224)),
    "googlenet": (lambda: torchvision.models.googlenet(init_weights=False, aux_logits=False), (3, 224, 224)),
}


DEPTHWISE_UNSEEN = {
    "mnasnet1_0": (lambda: torchvision.models.mnasnet1_0(), (3, 224, 224)),
    "shufflenet_v2_x1_0": (lambda: torchvision.models.shufflenet_v2_x1_0(), (3, 224, 224)),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(), (3, 224, 224)),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(), (3, 224, 224)),
    "efficientnet_b3": (lambda: torchvision.models.efficientnet_b3(), (3, 300, 300)),
    "efficientnet_v2_s": (lambda: torchvision.models.efficientnet_v2_s(), (3, 384, 384)),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(), (3, 224, 224)),
}

GROUPED_UNSEEN = {
    "resnext50_32x4d": (lambda: torchvision.models.resnext50_32x4d(), (3, 224, 224)),
    "resnext101_32x8d": (lambda: torchvision.models.resnext101_32x8d(), (3, 224, 224)),
    "resnext101_64x4d": (lambda: torchvision.models.resnext101_64x4d(), (3, 224, 224)),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(), (3, 224, 224)),
    "regnet_y_800mf": (lambda: torchvision.models.regnet_y_800mf(), (3, 224, 224)),
    "regnet_y_1_6gf": (lambda: torchvision.models.regnet_y_1_6gf(), (3, 224, 224)),
    "regnet_x_400mf": (lambda: torchvision.models.regnet_x_400mf(), (3, 224, 224)),
    "regnet_x_3_2gf": (lambda: torchvision.models.regnet_x_3_2gf(), (3, 224, 224)),
}


VIDEO_UNSEEN = {
    "r3d_18": (lambda: torchvision.models.video.r3d_18(), (3, 16, 112, 112)),
    "mc3_18": (lambda: torchvision.models.video.mc3_18(), (3, 16, 112, 112)),
    "r2plus1d_18": (lambda: torchvision.models.video.r2plus1d_18(), (3, 16, 112, 112)),
    "s3d": (lambda: torchvision.models.video.s3d(), (3, 16, 224, 224)),
    "swin3d_t": (lambda: torchvision.models.video.swin3d_t(), (3, 16, 224, 224)),
}


def write_unseen(path, networks, what, keep):
    """The layers `keep` selects of each network, FP16 NHWC at N=1 then 32, each key once."""
    keys = []
    for name, (make, chw) in networks.items():
        found = [s for s in shapes(make(), chw) if keep(s)]
        for n in (1, 32):
            keys += [k for k in (key(s, n, "FP16", "NHWC") for s in found) if k not in keys]
        print(name, len(found), what, "layers")
    with open(path, "w") as fh:
        fh.write("\n".join(keys) + "\n")


def main():
    out_dir = sys.argv[1]
    if "--depthwise-unseen" in sys.argv:
        write_unseen(f"{out_dir}/depthwise.txt", DEPTHWISE_UNSEEN, "depthwise",
                     lambda s: s[0] == s[4] == s[10] > 1)
        return
    if "--video-unseen" in sys.argv:
        keys = []
        for name, (make, cdhw) in VIDEO_UNSEEN.items():
            found = shapes3d(make(), cdhw)
            for n in (1, 32):
                keys += [k for k in (key3d(s, n, "FP16") for s in found) if k not in keys]
            print(name, len(found), "3-D layers")
        with open(f"{out_dir}/video.txt", "w") as fh:
            fh.write("\n".join(keys) + "\n")
        return
    if "--grouped-unseen" in sys.argv:
        write_unseen(f"{out_dir}/grouped.txt", GROUPED_UNSEEN, "grouped",
                     lambda s: s[10] > 1 and not s[0] == s[4] == s[10])
        return
    if "--held-out" in sys.argv:
        for name, (make, chw) in HELD_OUT.items():
            found = shapes(make(), chw)
            lines = [f"# {name} (held out of kiln's lists): {len(found)} distinct conv layers at {chw}, "
                     f"FP16 NHWC, generated by ci/gen_problems.py --held-out (torch {torch.__version__}, "
                     f"torchvision {torchvision.__version__})"]
            for n in (1, 32):
                lines += [key(s, n, "FP16", "NHWC") for s in found]
            with open(f"{out_dir}/{name}.txt", "w") as fh:
                fh.write("\n".join(lines) + "\n")
            print(name, len(found), "layers")
        return
    for name, (make, chw) in NETWORKS.items():
        found = [s for s in shapes(make(), chw) if ONLY.get(name, lambda s: True)(s)]
        lines = [f"# {name}: {len(found)} distinct conv layers from a forward pass at {chw}, "
                 f"generated by ci/gen_problems.py (torch {torch.__version__}, torchvision {torchvision.__version__})"]
        for n in (1, 32):
            for dtype in ("FP32", "FP16"):
                for layout in ("NCHW", "NHWC"):
                    lines += [key(s, n, dtype, layout) for s in found]
            lines += [key(s, n, "BF16", "NHWC") for s in found]
        with open(f"{out_dir}/{name}.txt", "w") as fh:
            fh.write("\n".join(lines) + "\n")
        print(name, len(found), "layers,", len(lines) - 1, "problems")


main()
