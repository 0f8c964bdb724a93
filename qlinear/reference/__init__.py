"""fp32 PyTorch references for every op and every dequantization (CPU-runnable).

Tests, benchmarks and the CPU fallback path share these functions, so a kernel is always
compared with the code that also serves users without a GPU.
"""
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref
from qlinear.reference.w4a16 import dequantize_canonical, dequantize_w4a16, w4a16_linear_ref
from qlinear.reference.fp8 import dequant_fp8_block_ref, dequant_fp8_group_ref, fp8_block_gemm_ref, fp8_block_linear_ref, fp8_scaled_linear_ref, per_token_group_quant_fp8_ref, per_token_quant_fp8_ref, rms_norm_quant_fp8_ref, static_quant_fp8_ref
