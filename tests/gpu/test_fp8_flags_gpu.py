"""The flags-mode decode pair on a GPU (csrc/group_quant.cuh flags mode + csrc/fp8_gemv.cuh waiting for per-k-block
release flags instead of griddepcontrol.wait): the same output bit for bit as the PDL-wait pair on the same codes,
for several configs, shapes, dtypes and M; every flag back at 0 after each pair; CUDA-graph replays of many pairs
on different x within one graph (a GEMV reading an earlier pair's codes would differ); the bindings' refusals."""

import pytest
import torch

from qlinear._utils import FP8_E4M3
from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"


def _ext():
    from qlinear.kernels import cuda_ext

    if not cuda_ext.is_available():
        pytest.skip(f"CUDA extension unavailable: {cuda_ext.failure_reason()}")
    return cuda_ext.load()


def _x(M: int, K: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator(device=DEV).manual_seed(seed)
    return (torch.randn(M, K, device=DEV, generator=g) * 3).to(dtype)


def _weights(N: int, K: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device=DEV).manual_seed(seed)
    w = (torch.randn(N, K, device=DEV, generator=g) * 60).to(FP8_E4M3)
    wsi = torch.rand((N + 127) // 128, K // 128, device=DEV, generator=g) * 1e-3 + 1e-4
    return w, wsi


def _pair(monkeypatch, quantizer: str, x, w, wsi, code: int, trigger: str = "early", rows: int = 8,
          stride: int = 32):
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", quantizer)
    monkeypatch.setattr(ops, "FP8_CUDA_FLAG_ROWS", rows)
    monkeypatch.setattr(ops, "FP8_CUDA_FLAG_STRIDE", stride)
    return ops.fp8_block_gemv_cuda(x, w, wsi, config=code, pdl=True, quant_pdl=trigger)


def _flags_zero() -> bool:
    torch.cuda.synchronize()
    return all(int(f.count_nonzero()) == 0 for f in ops._cuda_flags.values())


# (N, K, code): XA register kernels of the table rows, split-K codes (4 K splits on 576 rows, 2 on 1536) and a
# two-row-tile code
CASES = [(2112, 7168, 11011114), (2112, 7168, 11011116), (576, 7168, 11041108), (1536, 7168, 1021107),
         (2112, 7168, 1012107), (2112, 1024, 11011114)]


@pytest.mark.parametrize("N,K,code", CASES)
@pytest.mark.parametrize("M", [1, 4, 9, 16])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_equals_pdl_wait_pair(monkeypatch, N, K, code, M, dtype):
    _ext()
    w, wsi = _weights(N, K, seed=N + M)
    x = _x(M, K, dtype, seed=M * 7 + K)
    want = _pair(monkeypatch, "cuda", x, w, wsi, code)
    for trigger, rows, stride, sleep in [("early", 8, 32, 0), ("late", 8, 1, 200), ("first", 16, 32, 0),
                                         ("early", 1, 1, 50), ("late", 16, 7, 0)]:
        monkeypatch.setattr(ops, "FP8_CUDA_FLAG_SLEEP", sleep)
        got = _pair(monkeypatch, "cuda-flags", x, w, wsi, code, trigger, rows, stride)
        assert got is not None and torch.equal(got, want), (trigger, rows, stride)
        assert _flags_zero(), (trigger, rows, stride)
    rel = ((want.float().cpu() - ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128)).float()).norm()
           / ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128)).float().norm()).item()
    assert rel <= 1e-2, rel


def test_flags_path_is_taken(monkeypatch):
    """The table's fourth field selects the flags pair, which calls the quantizer with flags."""
    C = _ext()
    calls = []
    real = C.group_quant_fp8

    class Spy:
        def __getattr__(self, name):
            return getattr(C, name)

        def group_quant_fp8(self, *a):
            calls.append(len(a))
            return real(*a)

    from qlinear.kernels import cuda_ext

    monkeypatch.setattr(cuda_ext, "load", lambda: Spy())
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", {(2112, 7168): ((16, 11011114, "early", "cuda-flags"),), None: 0})
    w, wsi = _weights(2112, 7168, seed=1)
    x = _x(16, 7168, torch.bfloat16, seed=2)
    got = ops.fp8_block_gemv_cuda(x, w, wsi, pdl=True)
    assert calls == [13]  # q, s, x, group, eps, pdl, trigger, threads, prefetch, flags, parts, consumers, stride
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
    assert torch.equal(got, ops.fp8_block_gemv_cuda(x, w, wsi, config=11011114, pdl=True, quant_pdl="early"))


@pytest.mark.parametrize("trigger", ["early", "late"])
def test_graph_of_many_pairs(monkeypatch, trigger):
    """One graph holds 12 pairs on 4 different x (and two shapes), back to back with PDL; replays after new x are
    copied in. Each output equals the PDL-wait pair's on its own x: a GEMV that read another pair's codes, or a
    flag still set from an earlier pair, would not."""
    _ext()
    monkeypatch.setattr(ops, "FP8_CUDA_FLAG_ROWS", 8)
    shapes = [(2112, 7168, 11011114), (576, 7168, 11041108)]
    wts = [_weights(n, k, seed=n) for n, k, _ in shapes]
    xs = [_x(16, 7168, torch.bfloat16, seed=100 + i) for i in range(4)]
    plan = [(i % 4, i % 2) for i in range(12)]

    def run():
        return [ops.fp8_block_gemv_cuda(xs[xi], *wts[si], config=shapes[si][2], pdl=True, quant_pdl=trigger)
                for xi, si in plan]

    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda-flags")
    run()  # warm-up: workspaces and flags of this stream
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        run()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = run()
    for rep in range(3):
        for i, x in enumerate(xs):
            x.copy_(_x(16, 7168, torch.bfloat16, seed=1000 * rep + i))
        for _ in range(2):
            g.replay()
        torch.cuda.synchronize()
        monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
        want = run()
        monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda-flags")
        for j, (o, ww) in enumerate(zip(outs, want)):
            assert torch.equal(o, ww), (rep, j)
    assert _flags_zero()


def test_binding_refusals():
    C = _ext()
    M, K = 16, 1024
    x = _x(M, K, torch.bfloat16, seed=5)
    q = torch.empty(M, K, dtype=FP8_E4M3, device=DEV)
    s = torch.empty(M, K // 128, dtype=torch.float32, device=DEV)
    flags = torch.zeros(64, dtype=torch.int32, device=DEV)
    with pytest.raises(RuntimeError, match="trigger must not be 2"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 2, 0, False, flags, 2, 66)
    x64 = _x(64, K, torch.bfloat16, seed=6)
    q64 = torch.empty(64, K, dtype=FP8_E4M3, device=DEV)
    with pytest.raises(RuntimeError, match="at most 512 threads"):  # 64 rows x 16 lanes in one CTA
        C.group_quant_fp8(q64, torch.empty(64, K // 128, device=DEV), x64, 128, 1e-10, True, 1, 0, False, flags, 1, 66)
    with pytest.raises(RuntimeError, match="flags: expected a contiguous int32"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 1, 0, False, flags.float(), 2, 66)
    with pytest.raises(RuntimeError, match="flags: expected at least .* groups x flag_parts = 8 x 9"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 1, 0, False, flags, 9, 66)
    with pytest.raises(RuntimeError, match="flags: expected at least .* = 8 x 2 .* flag_stride 32"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 1, 0, False, flags, 2, 66, 32)
    with pytest.raises(RuntimeError, match="flag_stride: expected 1 to 1024"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 1, 0, False, flags, 2, 66, 0)
    with pytest.raises(RuntimeError, match="flag_consumers: expected"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 1, 0, False, flags, 2, 0)
    assert int(flags.count_nonzero()) == 0  # nothing was launched
    w, wsi = _weights(256, K, seed=7)
    ws = ops._cuda_workspace(x.device)
    with pytest.raises(RuntimeError, match=r"flags: expected a contiguous int32 tensor of at least \(k / 128"):
        C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, 11011114, True, flags[:3], 1)
    with pytest.raises(RuntimeError, match="flag_stride 32 .1 to 1024."):
        C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, 11011114, True, flags, 1, 32)
    with pytest.raises(TypeError, match="flags: expected int32"):
        C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, 11011114, True, flags.float(), 1)
    # the TMA ring kernel (T = 1) has no flags wait
    with pytest.raises(RuntimeError, match=r"not supported \(code 8"):
        C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, 101042404, True, flags, 1)
    with pytest.raises(RuntimeError, match=r"not supported \(code 8"):  # flag_sleep past 100 us
        C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, 11011114, True, flags, 1, 1, 200000)
    assert C.fp8_block_gemv_flag_consumers(q, s, w, wsi, ws, 11011114) == 16
    assert C.fp8_block_gemv_flag_consumers(q, s, w, wsi, ws, 1021107) == 16  # 2 K splits of 16 CTAs
    assert C.fp8_block_gemv_flag_consumers(q, s, w, wsi, ws, 1012107) == 8  # two row tiles per CTA
    # a refused flags pair (T = 1 code) launches nothing and leaves the flags alone
    assert ops._gemv_flagged(C, x, w, wsi, None, ws, 101042404, True, "early") is None
    assert _flags_zero()
