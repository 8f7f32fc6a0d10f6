"""Export the networks of NVIDIA's published DLA performance tables, rebuilt from their public
architectures, as shape-only ONNX files (opset 13) for the latency model's fit and checks.

Shape-only: every Conv/Linear weight is a ConstantOfShape node (one value, the weight's shape) that
dlakit folds at import, so each file is a few kilobytes while its layers, shapes and MACs are those of
the full network. Latency depends on shapes, not on weight values. How close each rebuild is to the
published file is in docs/latency-model.md.
Usage: /usr/bin/python3 export_latency_nets.py OUT_DIR [NAME...]
"""
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm


def conv_bn(cin, cout, k, s=1, p=None, act=nn.ReLU):
    p = k // 2 if p is None else p
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), act())


class ResNet34Backbone(nn.Module):
    """torchvision ResNet-34 without avgpool/fc; returns C3, C4, C5 (what a RetinaNet/FPN reads)."""

    def __init__(self):
        super().__init__()
        r = tvm.resnet34(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1)
        self.layer2, self.layer3, self.layer4 = r.layer2, r.layer3, r.layer4

    def forward(self, x):
        c3 = self.layer2(self.stem(x))
        c4 = self.layer3(c3)
        return c3, c4, self.layer4(c4)


class Fpn(nn.Module):
    """RetinaNet FPN: P3-P5 from C3-C5 (1x1 lateral, nearest 2x top-down, 3x3 smoothing), P6/P7 by stride-2
    3x3 convs (P6 from `p6_from`: C5 as in the RetinaNet paper, P5 as in torchvision's v2)."""

    def __init__(self, in_chans, p6_from_c5):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(c, 256, 1) for c in in_chans])
        self.smooth = nn.ModuleList([nn.Conv2d(256, 256, 3, 1, 1) for _ in in_chans])
        self.p6_from_c5 = p6_from_c5
        self.p6 = nn.Conv2d(in_chans[-1] if p6_from_c5 else 256, 256, 3, 2, 1)
        self.p7 = nn.Conv2d(256, 256, 3, 2, 1)

    def forward(self, feats):
        lat = [l(f) for l, f in zip(self.lateral, feats)]
        for i in range(len(lat) - 1, 0, -1):
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], scale_factor=2.0, mode="nearest")
        outs = [s(l) for s, l in zip(self.smooth, lat)]
        p6 = self.p6(feats[-1] if self.p6_from_c5 else outs[-1])
        return outs + [p6, self.p7(F.relu(p6))]


class RetinaHead(nn.Module):
    """Four 3x3 256-channel convs with ReLU per branch, then the class and box convs (no sigmoid, no
    decoding: the published graphs end at the head convolutions)."""

    def __init__(self, num_classes, anchors=9):
        super().__init__()

        def tower():
            return nn.Sequential(*[m for _ in range(4) for m in (nn.Conv2d(256, 256, 3, 1, 1), nn.ReLU())])

        self.cls_tower, self.box_tower = tower(), tower()
        self.cls = nn.Conv2d(256, anchors * num_classes, 3, 1, 1)
        self.box = nn.Conv2d(256, anchors * 4, 3, 1, 1)

    def forward(self, levels):
        return [o for p in levels for o in (self.cls(self.cls_tower(p)), self.box(self.box_tower(p)))]


class RetinaNet(nn.Module):
    def __init__(self, body, in_chans, num_classes, p6_from_c5):
        super().__init__()
        self.body, self.fpn, self.head = body, Fpn(in_chans, p6_from_c5), RetinaHead(num_classes)

    def forward(self, x):
        return tuple(self.head(self.fpn(self.body(x))))


class ResNeXt50Body(nn.Module):
    def __init__(self):
        super().__init__()
        r = tvm.resnext50_32x4d(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1)
        self.layer2, self.layer3, self.layer4 = r.layer2, r.layer3, r.layer4

    def forward(self, x):
        c3 = self.layer2(self.stem(x))
        c4 = self.layer3(c3)
        return [c3, c4, self.layer4(c4)]


class SsdResNet34(nn.Module):
    """MLPerf SSD-ResNet-34 (1200x1200): ResNet-34 to layer3 with layer3's stride set to 1 (256 channels at
    150x150), five extra blocks, and per level one 3x3 stride-3 head conv with the box and class outputs
    fused along channels (what NVIDIA's prepare script does to the published file)."""

    def __init__(self, classes=81):
        super().__init__()
        r = tvm.resnet34(weights=None)
        r.layer3[0].conv1.stride = (1, 1)
        r.layer3[0].downsample[0].stride = (1, 1)
        self.body = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3)
        chans = [256, 512, 512, 256, 256, 256]
        mids = [256, 256, 128, 128, 128]
        strides = [2, 2, 2, 2, 1]
        pads = [1, 1, 1, 0, 0]
        self.extra = nn.ModuleList([
            nn.Sequential(nn.Conv2d(chans[i], mids[i], 1), nn.ReLU(), nn.Conv2d(mids[i], chans[i + 1], 3, strides[i], pads[i]),
                          nn.ReLU()) for i in range(5)])
        anchors = [4, 6, 6, 6, 4, 4]
        self.heads = nn.ModuleList([nn.Conv2d(c, a * (4 + classes), 3, 3, 1) for c, a in zip(chans, anchors)])

    def forward(self, x):
        feats = [self.body(x)]
        for e in self.extra:
            feats.append(e(feats[-1]))
        return tuple(h(f) for h, f in zip(self.heads, feats))


class SsdMobileNetV1(nn.Module):
    """TensorFlow's SSD-MobileNetV1 COCO (300x300): MobileNetV1 (ReLU6, depth 1.0), features at the 11th
    (19x19x512) and 13th (10x10x1024) blocks, four extra 1x1 + 3x3/2 blocks, 1x1 box predictors (3 anchors
    on the first level, 6 on the others, 91 classes) with box and class convs fused along channels."""

    def __init__(self, classes=91):
        super().__init__()

        def dw_pw(cin, cout, s):  # 3x3 depthwise then 1x1 pointwise, each with BN and ReLU6
            return nn.Sequential(
                nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())

        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)] + \
              [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]
        layers = [conv_bn(3, 32, 3, 2, 1, nn.ReLU6)] + [dw_pw(cin, cout, s) for cin, cout, s in cfg]
        self.to_c11 = nn.Sequential(*layers[:12])
        self.to_c13 = nn.Sequential(*layers[12:])
        ex = [(1024, 256, 512), (512, 128, 256), (256, 128, 256), (256, 64, 128)]
        self.extra = nn.ModuleList([
            nn.Sequential(conv_bn(c, m, 1, 1, 0, nn.ReLU6), conv_bn(m, o, 3, 2, 1, nn.ReLU6)) for c, m, o in ex])
        chans = [512, 1024, 512, 256, 256, 128]
        anchors = [3, 6, 6, 6, 6, 6]
        self.heads = nn.ModuleList([nn.Conv2d(c, a * (4 + classes), 1) for c, a in zip(chans, anchors)])

    def forward(self, x):
        c11 = self.to_c11(x)
        feats = [c11, self.to_c13(c11)]
        for e in self.extra:
            feats.append(e(feats[-1]))
        return tuple(h(f) for h, f in zip(self.heads, feats))


class YoloV5s(nn.Module):
    """Ultralytics YOLOv5s v7.0 (depth 0.33, width 0.5, SiLU) ending at the three 1x1 detect convs (no anchor
    decoding), as cuDLA-samples builds it."""

    def __init__(self, classes=80):
        super().__init__()
        silu = nn.SiLU

        def cv(cin, cout, k=1, s=1, p=None):
            return conv_bn(cin, cout, k, s, p, silu)

        class Bottleneck(nn.Module):
            def __init__(self, c, shortcut):
                super().__init__()
                self.cv1, self.cv2, self.add = cv(c, c, 1), cv(c, c, 3), shortcut

            def forward(self, x):
                y = self.cv2(self.cv1(x))
                return x + y if self.add else y

        class C3(nn.Module):
            def __init__(self, cin, cout, n, shortcut=True):
                super().__init__()
                h = cout // 2
                self.cv1, self.cv2, self.cv3 = cv(cin, h), cv(cin, h), cv(2 * h, cout)
                self.m = nn.Sequential(*[Bottleneck(h, shortcut) for _ in range(n)])

            def forward(self, x):
                return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))

        class Sppf(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.cv1, self.cv2 = cv(c, c // 2), cv(2 * c, c)
                self.pool = nn.MaxPool2d(5, 1, 2)

            def forward(self, x):
                x = self.cv1(x)
                y1 = self.pool(x)
                y2 = self.pool(y1)
                return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

        self.b0 = nn.Sequential(cv(3, 32, 6, 2, 2), cv(32, 64, 3, 2), C3(64, 64, 1), cv(64, 128, 3, 2), C3(128, 128, 2))
        self.b1 = nn.Sequential(cv(128, 256, 3, 2), C3(256, 256, 3))
        self.b2 = nn.Sequential(cv(256, 512, 3, 2), C3(512, 512, 1), Sppf(512))
        self.h10 = cv(512, 256)
        self.h13 = C3(512, 256, 1, False)
        self.h14 = cv(256, 128)
        self.h17 = C3(256, 128, 1, False)
        self.h18 = cv(128, 128, 3, 2)
        self.h20 = C3(256, 256, 1, False)
        self.h21 = cv(256, 256, 3, 2)
        self.h23 = C3(512, 512, 1, False)
        self.detect = nn.ModuleList([nn.Conv2d(c, 3 * (classes + 5), 1) for c in (128, 256, 512)])

    def forward(self, x):
        p3 = self.b0(x)
        p4 = self.b1(p3)
        p5 = self.b2(p4)
        t10 = self.h10(p5)
        t13 = self.h13(torch.cat([F.interpolate(t10, scale_factor=2.0, mode="nearest"), p4], 1))
        t14 = self.h14(t13)
        o17 = self.h17(torch.cat([F.interpolate(t14, scale_factor=2.0, mode="nearest"), p3], 1))
        o20 = self.h20(torch.cat([self.h18(o17), t14], 1))
        o23 = self.h23(torch.cat([self.h21(o20), t10], 1))
        return tuple(d(o) for d, o in zip(self.detect, (o17, o20, o23)))


def resnet50():
    return tvm.resnet50(weights=None)


# name: (constructor, input N x C x H x W)
NETS = {
    "resnet34_backbone_1280x768": (ResNet34Backbone, (1, 3, 768, 1280)),
    "ssd_resnet34_1200": (SsdResNet34, (1, 3, 1200, 1200)),
    "resnet50_bs2": (resnet50, (2, 3, 224, 224)),
    "ssd_mobilenet_v1_300_bs2": (SsdMobileNetV1, (2, 3, 300, 300)),
    "retinanet_resnext50_800": (lambda: RetinaNet(ResNeXt50Body(), [512, 1024, 2048], 264, False), (1, 3, 800, 800)),
    "retinanet_resnet34_1280x768": (lambda: RetinaNet(ResNet34Backbone(), [128, 256, 512], 3, True), (1, 3, 768, 1280)),
    "yolov5s_672": (YoloV5s, (1, 3, 672, 672)),  # exported with a dynamic batch (published for 1..16)
}
DYNAMIC_BATCH = {"yolov5s_672"}


# --- Shape-only rewrite of the exported file, on the protobuf wire format (Debian ships no Python onnx).
# ModelProto.graph = 7; GraphProto.node = 1, initializer = 5; TensorProto.dims = 1, data_type = 2,
# name = 8, raw_data = 9; NodeProto.input = 1, output = 2, name = 3, op_type = 4, attribute = 5;
# AttributeProto.name = 1, t = 5, type = 20 (TENSOR = 4).
FLOAT, INT64 = 1, 7


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(buf):
    """[(field, wire_type, value)]: value is an int (varint) or bytes (length-delimited or fixed)."""
    out, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = read_varint(buf, i)
        elif w == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif w in (1, 5):
            n = 8 if w == 1 else 4
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {w}")
        out.append((f, w, v))
    return out


def read_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def emit(fs):
    out = bytearray()
    for f, w, v in fs:
        out += varint(f << 3 | w)
        if w == 0:
            out += varint(v)
        elif w == 2:
            out += varint(len(v)) + v
        else:
            out += v
    return bytes(out)


def tensor(name, dtype, dims, raw):
    fs = [(1, 0, d) for d in dims] + [(2, 0, dtype)]
    if name:
        fs.append((8, 2, name))
    return emit(fs + [(9, 2, raw)])


def shrink(model_bytes, min_elements=64):
    """Every float initializer of at least `min_elements` becomes ConstantOfShape(its shape) = 0.01."""
    top = fields(model_bytes)
    for k, (f, w, graph) in enumerate(top):
        if f != 7:
            continue
        kept, nodes = [], []
        for gf, gw, gv in fields(graph):
            if gf != 5:
                kept.append((gf, gw, gv))
                continue
            t = fields(gv)
            dims = [v for tf, tw, v in t if tf == 1 and tw == 0]
            for tf, tw, v in t:  # packed dims
                if tf == 1 and tw == 2:
                    j = 0
                    while j < len(v):
                        d, j = read_varint(v, j)
                        dims.append(d)
            dtype = next(v for tf, tw, v in t if tf == 2)
            name = next(v for tf, tw, v in t if tf == 8)
            numel = 1
            for d in dims:
                numel *= d
            if dtype != FLOAT or numel < min_elements:
                kept.append((gf, gw, gv))
                continue
            shape_name = name + b"__shape"
            kept.append((5, 2, tensor(shape_name, INT64, [len(dims)], b"".join(d.to_bytes(8, "little") for d in dims))))
            fill = tensor(b"", FLOAT, [1], struct.pack("<f", 0.01))
            value = emit([(1, 2, b"value"), (5, 2, fill), (20, 0, 4)])
            nodes.append((1, 2, emit([(1, 2, shape_name), (2, 2, name), (3, 2, name + b"__fill"),
                                      (4, 2, b"ConstantOfShape"), (5, 2, value)])))
        top[k] = (f, w, emit(nodes + kept))
    return emit(top)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    for name in sys.argv[2:] or list(NETS):
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            continue
        make, shape = NETS[name]
        torch.manual_seed(0)
        model = make().eval()
        x = torch.zeros(shape)
        with torch.no_grad():
            torch.onnx.export(model, x, path + ".tmp", opset_version=13, do_constant_folding=True,
                              input_names=["input"],
                              dynamic_axes={"input": {0: "batch"}} if name in DYNAMIC_BATCH else None)
        with open(path + ".tmp", "rb") as f:
            small = shrink(f.read())
        with open(path + ".tmp", "wb") as f:
            f.write(small)
        os.replace(path + ".tmp", path)
        print("export:", name, "x".join(map(str, shape)), os.path.getsize(path), "bytes", flush=True)


if __name__ == "__main__":
    main()
