"""Public functional ops.

Each op picks a backend in this order: the ``backend=`` argument, then the op's environment
variable, then the device's capability (CUDA kernel, Triton kernel, fp32 reference).
Importing this package loads no kernel: builds and Triton compiles happen on first call.
"""
from qlinear.ops.w4a16 import W4A16Weights, pack_w4a16, w4a16_backend, w4a16_linear
from qlinear.ops.norm import fused_add_rms_norm, rms_norm, rms_norm_slices
from qlinear.ops.fp8 import (Fp8GroupActivation, fp8_block_backend, fp8_block_linear, fp8_block_linear_quantized,
                             fp8_block_quantized_backend, fp8_scaled_backend, fp8_scaled_linear, per_token_group_quant_fp8,
                             per_token_quant_fp8, rms_norm_quant_fp8)
