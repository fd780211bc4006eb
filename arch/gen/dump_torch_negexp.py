"""Writes arch/torchexp_table.go: the BF16 / F16 inputs whose -torch.exp in float32 (llama.cpp's converter turns a
gated-delta-net A_log into -exp(A_log) with torch, after widening 16-bit tensors to float32) is not the correctly
rounded float32 of -exp(x). torch's CPU kernel (MKL's vsExp here) is accurate to about an ulp, not correctly rounded,
and ggufkit computes exp in float64; the table makes the two agree for 16-bit checkpoints.

Run with the torch the fixtures were made with (2.15.0, CPU); the table depends on torch's build and the CPU's ISA."""
import numpy as np
import torch

lines = ["// Code generated from torch %s (CPU, capability %s) by arch/gen/dump_torch_negexp.py; DO NOT EDIT." % (
    torch.__version__, torch.backends.cpu.get_cpu_capability()), "", "package arch", "",
    "// torchNegExpExceptions holds, for every finite BF16 and F16 value x whose",
    "// -torch.exp(x.float()) (the converter's A_log transform, in float32 on",
    "// torch's CPU kernel) is not the correctly rounded float32 of -exp(x), the",
    "// bits torch gives: x's 16-bit pattern -> the float32 bit pattern.",
    "var torchNegExpExceptions = map[string]map[uint16]uint32{"]
for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
    x = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(dt).float()
    got = (-torch.exp(x)).numpy().view(np.uint32)
    with np.errstate(all="ignore"):
        want = (-np.exp(x.numpy().astype(np.float64))).astype(np.float32).view(np.uint32)
    fin = torch.isfinite(x).numpy()
    row = ["0x%04x: 0x%08x," % (i, got[i]) for i in range(65536) if fin[i] and got[i] != want[i]]
    lines.append('\t"%s": {' % name)
    for k in range(0, len(row), 4):
        lines.append("\t\t" + " ".join(row[k:k + 4]))
    lines.append("\t},")
lines.append("}")
with open("arch/torchexp_table.go", "w") as f:
    f.write("\n".join(lines) + "\n")
