"""Checkpoint producers and helpers shared by the tests and ``python -m qlinear selfcheck``.

Library code, not tests: each module writes small checkpoints in one format with that format's
own producer where one installs (compressed-tensors), and returns the producer's own dequantized
weights as the fp32 reference. Modules here import only ``qlinear._utils``, ``qlinear.reference``,
``qlinear.parameter`` and ``qlinear.testing``; a format's producer package is imported inside the
function that needs it, so that importing ``qlinear.testing`` costs nothing.
"""
