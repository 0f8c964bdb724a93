"""Tensor-parallel process groups and the two collectives the parallel layers need.

A thin layer over ``torch.distributed`` (NCCL on GPUs, gloo on CPUs): no communication of our
own. This package is a leaf above ``qlinear._utils`` so that ``qlinear.layers`` may import it.
"""

from qlinear.distributed.comm import all_gather, all_reduce_sum, resolve_group, tp_rank_size

__all__ = ["resolve_group", "tp_rank_size", "all_gather", "all_reduce_sum"]
