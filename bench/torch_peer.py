#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the examples' graphs (scripts/gpu-check).

The three examples (examples/*.kg) written again in PyTorch with the same
shapes and ops (weights random: timing does not depend on them). Prints
one Markdown row per example: eager and torch.compile medians on the GPU,
input already on the device, synchronised around each run. kiln's own
median for the same example comes from kiln-run in gpu-check.

    torch_peer.py [--runs N]
    torch_peer.py --kernels     the kernel kinds of bench/kernel_profiles.py
                                (same titles, shapes and ops), one row each:
                                | title | median us | how timed |
"""

import argparse
import statistics
import sys
import time


def build(torch):
    nn, F = torch.nn, torch.nn.functional

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(784, 128), nn.Linear(128, 10)

        def forward(self, x):
            return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=-1)

    class ResnetBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.Conv2d(
                16, 16, 3, padding=1, bias=False)
            self.b1, self.b2 = nn.BatchNorm2d(16), nn.BatchNorm2d(16)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            return F.relu(self.b2(self.c2(y)) + x)

    class TransformerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(64, 64, bias=False) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(64), nn.LayerNorm(64)
            self.w1, self.w2 = nn.Linear(64, 128), nn.Linear(128, 64)

        def forward(self, x):
            s = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) * 0.125, dim=-1)
            h = self.ln1(x + self.o(s @ self.v(x)))
            return self.ln2(h + self.w2(F.gelu(self.w1(h))))

    return [("mlp", Mlp(), (8, 784)), ("resnet_block", ResnetBlock(), (1, 16, 16, 16)),
            ("transformer_block", TransformerBlock(), (1, 32, 64))]


def median_us(torch, fn, x, runs):
    for _ in range(5):
        fn(x)
    torch.cuda.synchronize()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def kernel_peers(torch):
    """Title (as in bench/kernel_profiles.py's KINDS) -> (function, inputs)."""
    F = torch.nn.functional

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    h = torch.float16
    w16, b16 = randn(4096, 4096, dtype=h), randn(4096, dtype=h) * 0.2
    w32 = randn(1024, 1024)
    g, b = randn(1024), randn(1024)
    attention = lambda q: F.scaled_dot_product_attention(q, q, q, scale=0.125)  # noqa: E731
    return [
        ("gemm f16 4096^3 +bias+relu", lambda x: torch.relu(torch.addmm(b16, x, w16)),
         randn(4096, 4096, dtype=h)),
        ("gemm f32 1024^3 (CUDA cores)", lambda x: x @ w32, randn(1024, 1024)),
        ("attention f16 8x12x1024x64", attention, randn(8, 12, 1024, 64, dtype=h)),
        ("attention f32 2x12x512x64", attention, randn(2, 12, 512, 64)),
        ("layer norm f32 4096x1024", lambda x: F.layer_norm(x, (1024,), g, b), randn(4096, 1024)),
        ("softmax f32 4096x1024", lambda x: torch.softmax(x * 0.5, dim=-1), randn(4096, 1024)),
        ("transpose f32 2048x2048", lambda x: x.t().contiguous(), randn(2048, 2048)),
        ("gelu f32 2048x2048", lambda x: F.gelu(x) * 2.0 + 1.0, randn(2048, 2048)),
        ("reduce_sum f32 4096x1024", lambda x: x.sum(dim=1), randn(4096, 1024)),
    ]


def event_median_us(torch, fn, x, runs):
    """Device time of one call: CUDA events around a replay of the call
    captured as a CUDA graph (like kiln-run --trace's events around a step;
    eager calls would also time Python's dispatch while the GPU waits).
    Returns (us, how)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(side)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(x)
        call, how = graph.replay, "graph replay"
    except Exception:  # an op that cannot be captured: eager calls
        call, how = (lambda: fn(x)), "eager"
    for _ in range(5):
        call()
    samples = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples), how


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--kernels", action="store_true")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("| (torch is not installed) | | |")
        return 0
    if not torch.cuda.is_available():
        print("| (no CUDA device for torch) | | |")
        return 0
    if args.kernels:
        # PyTorch's defaults: f32 matmuls in full f32 (no TF32), like kiln's strict precision.
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.inference_mode():
            for title, fn, x in kernel_peers(torch):
                us, how = event_median_us(torch, fn, x, args.runs)
                print(f"| {title} | {us:.1f} | {how} |")
        return 0
    with torch.inference_mode():
        for name, model, shape in build(torch):
            model = model.cuda().eval()
            x = torch.randn(*shape, device="cuda")
            eager = median_us(torch, model, x, args.runs)
            try:
                compiled = median_us(torch, torch.compile(model), x, args.runs)
                compiled_text = f"{compiled:.1f} us"
            except Exception as error:  # torch.compile needs a working toolchain
                compiled_text = f"failed: {type(error).__name__}"
            print(f"| {name} | {eager:.1f} us | {compiled_text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
