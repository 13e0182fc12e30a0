"""Check, without a GPU, what a FlashInfer patch does to torch.compile's view of fp4_quantize.

SGLang 0.5.9 compiles piecewise CUDA graphs with fullgraph=True. This traces
flashinfer.fp4_quantization.fp4_quantize the same way (dynamic shapes, meta tensors, a backend
that records the graph and never runs it) and prints whether tracing succeeds.

Usage, in a venv with a CPU torch and flashinfer-python (--no-deps, plus apache-tvm-ffi, einops,
ninja, numpy, nvidia-ml-py, requests, tabulate, tqdm, click, packaging) whose sources carry
the patch under test:
    python fp4_fullgraph_trace.py
Measured with torch 2.13.0+cpu and flashinfer-python 0.6.3:
  unpatched                                  -> fails: dynamo traces into fp4_quantize's body (here it
                                                stops at get_compute_capability, which refuses a
                                                non-CUDA device; on a GPU it reaches the JIT loader)
  flashinfer-fp4-quantize-compiler-disable   -> fails: Skip calling `torch.compiler.disable()`d function
  flashinfer-fp4-quantize-custom-op          -> succeeds: one torch.ops.flashinfer.fp4_quantize node
"""

import sys

import torch

import flashinfer.fp4_quantization as fq


def main() -> int:
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lambda *args: (None, None)

    def quantize(x, scale):
        return fq.fp4_quantize(x, scale)

    x = torch.empty(64, 256, dtype=torch.bfloat16, device="meta")
    scale = torch.empty(1, dtype=torch.float32, device="meta")
    torch._dynamo.reset()
    try:
        torch.compile(quantize, backend=backend, fullgraph=True, dynamic=True)(x, scale)
    except Exception as exc:  # noqa: BLE001 - report any tracing failure
        print(f"fullgraph trace FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        return 1
    ops = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    print("fullgraph trace OK:", ", ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
