"""The PyTorch peer of bench/gpu.sh: torchvision architectures (random weights) in FP16 on the GPU, channels
last (the layout PyTorch's convolutions are fastest in on tensor cores, and the one the issue's peer figures
in ../shared/specs/gpu-performance-facts.md were measured in), replayed from a CUDA graph, timed with CUDA
events. Prints one JSON object: {"models": {"NAME:BATCH": {...}}}. Runs up to 2026-12-05 used NCHW, about
1.5x slower for ResNet-50 at batch 32 (3.64 ms in the 2026-12-05 H200 run against the facts file's 2.40 ms,
also an H200).
Usage: pytorch_peer.py resnet50:1 resnet50:32 ..."""
import json
import statistics
import sys

import torch
import torchvision

torch.backends.cudnn.benchmark = True
results = {}
for spec in sys.argv[1:]:
    name, batch = spec.split(":")[0], int(spec.split(":")[1])
    model = getattr(torchvision.models, name)(weights=None).eval().cuda().half()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(5):  # cuDNN picks its algorithms before capture
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        model(x)
    for _ in range(20):
        graph.replay()
    runs = []
    for _ in range(30):  # 30 medians of 20 replays each
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            graph.replay()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / 20)
    results[spec] = {"batch": batch, "layout": "channels_last", "median_ms": statistics.median(runs),
                     "min_ms": min(runs)}
print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "models": results}))
