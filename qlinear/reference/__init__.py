"""fp32 PyTorch references for every op and every dequantization (CPU-runnable).

Tests, benchmarks and the CPU fallback path share these functions, so a kernel is always
compared with the code that also serves users without a GPU.
"""
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref
