"""Export torchvision architectures (random, seeded weights) and two small detectors to ONNX (opset 13).

Weights are random because no weights can be downloaded here; BatchNorm statistics are randomised too so
BN folding and numerics are exercised. Shapes are fixed. Skips models already exported.
Usage: /usr/bin/python3 export_torchvision.py OUT_DIR
"""
import os
import sys

import torch
import torch.nn as nn
import torchvision.models as tvm
import torchvision.models.segmentation as tvs


class TinyYolo(nn.Module):
    """A YOLOv3-tiny-like net: conv/leaky/maxpool backbone, two heads, nearest upsample + concat."""

    def __init__(self, nc=80):
        super().__init__()

        def cbl(i, o, k=3):
            return nn.Sequential(nn.Conv2d(i, o, k, 1, k // 2, bias=False), nn.BatchNorm2d(o), nn.LeakyReLU(0.1))

        self.b1 = nn.Sequential(cbl(3, 16), nn.MaxPool2d(2, 2), cbl(16, 32), nn.MaxPool2d(2, 2), cbl(32, 64),
                                nn.MaxPool2d(2, 2), cbl(64, 128), nn.MaxPool2d(2, 2), cbl(128, 256))
        self.b2 = nn.Sequential(nn.MaxPool2d(2, 2), cbl(256, 512), cbl(512, 1024), cbl(1024, 256, 1))
        self.h1 = nn.Sequential(cbl(256, 512), nn.Conv2d(512, 3 * (nc + 5), 1))
        self.lat = cbl(256, 128, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h2 = nn.Sequential(cbl(384, 256), nn.Conv2d(256, 3 * (nc + 5), 1))

    def forward(self, x):
        r = self.b1(x)
        y = self.b2(r)
        o1 = torch.sigmoid(self.h1(y))
        o2 = torch.sigmoid(self.h2(torch.cat([self.up(self.lat(y)), r], 1)))
        return o1, o2


class SsdLite(nn.Module):
    """An SSD-like detector on MobileNetV2 features: per-level heads, reshape/concat, softmax over classes."""

    def __init__(self, nc=21):
        super().__init__()
        f = tvm.mobilenet_v2(weights=None).features
        self.s1, self.s2 = f[:14], f[14:]
        self.nc = nc
        chans = [96, 1280]
        self.extra = nn.ModuleList([nn.Sequential(nn.Conv2d(1280, 256, 1), nn.ReLU(), nn.Conv2d(256, 512, 3, 2, 1), nn.ReLU()),
                                    nn.Sequential(nn.Conv2d(512, 128, 1), nn.ReLU(), nn.Conv2d(128, 256, 3, 2, 1), nn.ReLU()),
                                    nn.Sequential(nn.Conv2d(256, 128, 1), nn.ReLU(), nn.Conv2d(128, 256, 3, 2, 1), nn.ReLU())])
        chans += [512, 256, 256]
        self.cls = nn.ModuleList([nn.Conv2d(c, 6 * nc, 3, 1, 1) for c in chans])
        self.box = nn.ModuleList([nn.Conv2d(c, 6 * 4, 3, 1, 1) for c in chans])

    def forward(self, x):
        a = self.s1(x)
        b = self.s2(a)
        feats = [a, b]
        for e in self.extra:
            feats.append(e(feats[-1]))
        cls = torch.cat([c(f).permute(0, 2, 3, 1).reshape(1, -1, self.nc) for c, f in zip(self.cls, feats)], 1)
        box = torch.cat([b(f).permute(0, 2, 3, 1).reshape(1, -1, 4) for b, f in zip(self.box, feats)], 1)
        return torch.softmax(cls, -1), box


MODELS = {
    "resnet18": (lambda: tvm.resnet18(weights=None), 224),
    "resnet50": (lambda: tvm.resnet50(weights=None), 224),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None), 224),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(weights=None), 224),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(weights=None), 224),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(weights=None), 224),
    "googlenet": (lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=True), 224),
    "densenet121": (lambda: tvm.densenet121(weights=None), 224),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(weights=None), 224),
    "lraspp_mobilenet_v3": (lambda: tvs.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None), 520),
    "tiny_yolo": (lambda: TinyYolo(), 416),
    "ssdlite_mbv2": (lambda: SsdLite(), 300),
    "resnet18_qdq": (lambda: resnet18_qdq(), 224),
}


class FakeQuantConv(nn.Module):
    """A QAT-style convolution: per-tensor INT8 fake quantization of its input, per-output-channel of its
    weights (symmetric, zero point 0), which torch exports as QuantizeLinear/DequantizeLinear pairs."""

    def __init__(self, conv, input_amax):
        super().__init__()
        self.conv = conv
        self.scale = max(float(input_amax), 1e-6) / 127
        self.register_buffer("w_scale", conv.weight.detach().abs().amax(dim=(1, 2, 3)).clamp(min=1e-8) / 127)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, self.scale, 0, -128, 127)
        zero = torch.zeros_like(self.w_scale, dtype=torch.int32)
        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale, zero, 0, -128, 127)
        c = self.conv
        return nn.functional.conv2d(x, w, c.bias, c.stride, c.padding, c.dilation, c.groups)


def resnet18_qdq():
    """ResNet-18 with every Conv wrapped in FakeQuantConv; input ranges from one seeded forward pass."""
    model = tvm.resnet18(weights=None).eval()
    randomise_bn(model, torch.Generator().manual_seed(1))
    amax, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_pre_hook(
                lambda mod, inp, name=name: amax.__setitem__(name, max(amax.get(name, 0.0), float(inp[0].abs().max())))))
    with torch.no_grad():
        model(torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(3)))
    for h in hooks:
        h.remove()
    # The forward pass's last bits depend on the CPU's vector width; 4 significant digits make the exported
    # file (and its checksum) the same on every machine.
    amax = {k: float(f"{v:.4g}") for k, v in amax.items()}
    for name, m in list(model.named_modules()):
        for child_name, child in list(m.named_children()):
            full = (name + "." if name else "") + child_name
            if isinstance(child, nn.Conv2d):
                setattr(m, child_name, FakeQuantConv(child, amax[full]))
    return model


def randomise_bn(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    only = sys.argv[2:] or list(MODELS)
    for name in only:
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            continue
        make, size = MODELS[name]
        torch.manual_seed(0)
        model = make().eval()
        randomise_bn(model, torch.Generator().manual_seed(1))
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            torch.onnx.export(model, x, path + ".tmp", opset_version=13, do_constant_folding=True,
                              input_names=["input"])
        os.replace(path + ".tmp", path)
        print("export:", name, size, flush=True)


if __name__ == "__main__":
    main()
