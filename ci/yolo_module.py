"""A YOLO-style detector in PyTorch with YOLOv8n's structure and module names, the twin of
kiln's `kiln::net::models::yolov8n` (written here from the published architecture: C2f
blocks, SPPF, a nearest-upsample feature pyramid and a decoupled head; no Ultralytics code).
Its state_dict names (`model.<i>....`) are the ones kiln's definition reads.

forward() returns the three scales' raw maps, [N, 64 + classes, H, W] at strides 8, 16, 32:
the box distribution bins and the class scores, before decoding.
"""

import torch
from torch import nn


class Conv(nn.Module):
    """Convolution (no bias), batch norm (eps 1e-3), SiLU."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n, shortcut):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.cv1 = Conv(c1, c1 // 2, 1)
        self.cv2 = Conv(c1 // 2 * 4, c2, 1)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Detect(nn.Module):
    def __init__(self, classes, ch):
        super().__init__()
        c2, c3 = max(16, ch[0] // 4, 64), max(ch[0], min(classes, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 64, 1)) for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, classes, 1)) for x in ch)

    def forward(self, xs):
        return [torch.cat((b(x), c(x)), 1) for x, b, c in zip(xs, self.cv2, self.cv3)]


class YoloV8n(nn.Module):
    def __init__(self, classes=80):
        super().__init__()
        up = nn.Upsample(scale_factor=2, mode="nearest")
        self.model = nn.ModuleList([
            Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), C2f(32, 32, 1, True),            # 0-2
            Conv(32, 64, 3, 2), C2f(64, 64, 2, True),                              # 3-4: P3
            Conv(64, 128, 3, 2), C2f(128, 128, 2, True),                           # 5-6: P4
            Conv(128, 256, 3, 2), C2f(256, 256, 1, True), SPPF(256, 256),          # 7-9: P5
            up, nn.Identity(), C2f(384, 128, 1, False),                            # 10-12
            up, nn.Identity(), C2f(192, 64, 1, False),                             # 13-15
            Conv(64, 64, 3, 2), nn.Identity(), C2f(192, 128, 1, False),            # 16-18
            Conv(128, 128, 3, 2), nn.Identity(), C2f(384, 256, 1, False),          # 19-21
            Detect(classes, (64, 128, 256)),                                       # 22
        ])

    def forward(self, x):
        m = self.model
        x = m[2](m[1](m[0](x)))
        p3 = m[4](m[3](x))
        p4 = m[6](m[5](p3))
        p5 = m[9](m[8](m[7](p4)))
        h4 = m[12](torch.cat((m[10](p5), p4), 1))
        o3 = m[15](torch.cat((m[13](h4), p3), 1))
        o4 = m[18](torch.cat((m[16](o3), h4), 1))
        o5 = m[21](torch.cat((m[19](o4), p5), 1))
        return m[22]([o3, o4, o5])
