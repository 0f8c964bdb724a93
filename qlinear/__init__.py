"""qlinear: quantization-aware linear layers, strided RMSNorm kernels and checkpoint loading.

Importing this package must stay cheap and must work without a GPU: it builds nothing and
loads no CUDA code. Kernels are compiled or loaded on first use.
"""

__version__ = "0.1.0"
