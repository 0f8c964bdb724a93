"""Public functional ops.

Each op picks a backend in this order: the ``backend=`` argument, then the op's environment
variable, then the device's capability (CUDA kernel, Triton kernel, fp32 reference).
Importing this package loads no kernel: builds and Triton compiles happen on first call.
"""
