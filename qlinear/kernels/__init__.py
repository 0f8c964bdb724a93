"""Device code launchers: the CUDA extension loader (built and cached on first use) and the
Triton kernels. Nothing here is imported by ``import qlinear``; ``qlinear.ops`` imports
submodules, which must not compile or load anything at import time.
"""
