"""The CUDA per-token-group FP8 quantizer (csrc/group_quant.cuh) on a GPU: codes and scales equal to the
Triton quantizer's bit for bit and within one e4m3 step of the fp32 CPU reference, on strided rows, every
supported group size and dtype, padded rows, column-major scales and every PDL trigger; the auto dispatch
and its fallback; the decode GEMV's quantize-then-GEMM pair on either quantizer; the binding's errors."""

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from qlinear._utils import FP8_E4M3
from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"


_ext = cuda_ext_ops


def _x(M: int, K: int, dtype: torch.dtype, seed: int, row_stride: int | None = None) -> torch.Tensor:
    g = torch.Generator(device=DEV).manual_seed(seed)
    base = torch.randn(M, row_stride or K, device=DEV, generator=g) * 3
    return base.to(dtype)[:, :K]


def _bits(q: torch.Tensor) -> torch.Tensor:
    return q.view(torch.uint8)


def _assert_same(got, want, what: str) -> None:
    (q, s), (qw, sw) = got, want
    assert q.shape == qw.shape and q.dtype == FP8_E4M3 and q.is_contiguous(), (what, q.shape, qw.shape)
    n = int((_bits(q) != _bits(qw)).sum())
    assert n == 0, f"{what}: {n} of {q.numel()} codes differ"
    assert s.shape == sw.shape and s.stride() == sw.stride(), (what, s.shape, s.stride(), sw.shape, sw.stride())
    assert torch.equal(s, sw), f"{what}: scales differ"


def _assert_near_reference(q, s, x, group: int, what: str) -> None:
    """Scales equal to the CPU reference's, codes at most one e4m3 step from its on at most 1e-3 of the elements
    (the bound tests/gpu/test_fp8_gpu.py::test_quant_bit_exact measured for the Triton quantizer)."""
    qr, sr = ref.per_token_group_quant_fp8_ref(x.cpu(), group)
    assert torch.equal(s.cpu().contiguous(), sr), f"{what}: scales differ from the reference"
    a, b = q.cpu().float(), qr.float()
    differ = a != b
    if differ.any():
        mag = torch.maximum(a.abs(), b.abs())[differ]
        step = torch.exp2(torch.floor(torch.log2(mag.clamp_min(2.0**-6))) - 3)
        worst = float(((a - b).abs()[differ] / step).max())
        assert worst <= 1.0 + 1e-6 and int(differ.sum()) <= 1e-3 * q.numel(), (what, int(differ.sum()), worst)


@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("K", [7168, 1536, 1472, 200])
@pytest.mark.parametrize("M", [1, 3, 16, 4096])
def test_equals_triton(M, K, dtype, column_major):
    _ext()
    x = _x(M, K, dtype, seed=M * 7 + K, row_stride=K + 64)
    got = ops.per_token_group_quant_fp8(x, 128, column_major_scales=column_major, backend="cuda")
    want = ops.per_token_group_quant_fp8(x, 128, column_major_scales=column_major, backend="triton")
    _assert_same(got, want, f"M={M} K={K} {dtype}")
    _assert_near_reference(*got, x, 128, f"M={M} K={K} {dtype}")


@pytest.mark.parametrize("dtype,group", [(torch.bfloat16, 8), (torch.bfloat16, 16), (torch.bfloat16, 32),
                                         (torch.bfloat16, 64), (torch.bfloat16, 256), (torch.float16, 32),
                                         (torch.float32, 4), (torch.float32, 16), (torch.float32, 64),
                                         (torch.float32, 128)])
def test_group_sizes(dtype, group):
    _ext()
    K = 1000 if group < 256 else 1280  # a short last group where it is not a multiple
    x = _x(37, K, dtype, seed=group)
    q, s = ops.per_token_group_quant_fp8(x, group, backend="cuda")
    _assert_near_reference(q, s, x, group, f"group {group} {dtype}")
    if group >= 16:
        _assert_same((q, s), ops.per_token_group_quant_fp8(x, group, backend="triton"), f"group {group} {dtype}")


@pytest.mark.parametrize("column_major", [False, True])
def test_padded_rows(column_major):
    _ext()
    from qlinear.kernels import fp8_triton

    x = _x(5, 7168, torch.bfloat16, seed=5, row_stride=7232)
    got = ops.quant_fp8_cuda(x, 128, column_major_scales=column_major, pad_rows_to=4)
    want = fp8_triton.per_token_group_quant_fp8(x, 128, column_major_scales=column_major, pad_rows_to=4,
                                                scale_eps=ref.FP8_SCALE_EPS)
    assert got[0].shape == (8, 7168)
    _assert_same(got, want, "padded")
    assert not _bits(got[0][5:]).any()
    assert torch.all(got[1][5:] == torch.tensor(ref.FP8_SCALE_EPS, dtype=torch.float32) / 448)


@pytest.mark.parametrize("trigger", ["late", "early", "first", "exit"])
@pytest.mark.parametrize("threads", [0, 32, 64, 256, 512])
def test_launch_knobs(trigger, threads):
    _ext()
    x = _x(16, 7168, torch.bfloat16, seed=threads)
    want = ops.per_token_group_quant_fp8(x, 128, backend="triton")
    for pdl in (False, True):
        for prefetch in (False, True):
            _assert_same(ops.quant_fp8_cuda(x, 128, pdl=pdl, trigger=trigger, threads=threads, prefetch=prefetch),
                         want, f"pdl={pdl} {trigger} {threads} prefetch={prefetch}")


def test_carveout():
    """A preferred shared-memory carveout on the launch (0, 10, 100 %) gives the same codes and scales as none;
    one outside -1 .. 100 is refused, naming it."""
    _ext()
    x = _x(16, 7168, torch.bfloat16, 31)
    want = ops.quant_fp8_cuda(x, 128, pdl=True, trigger="first")
    for cv in (0, 10, 100):
        _assert_same(ops.quant_fp8_cuda(x, 128, pdl=True, trigger="first", carveout=cv), want, f"carveout {cv}")
    for bad in (101, -2):
        with pytest.raises(RuntimeError, match="carveout"):
            ops.quant_fp8_cuda(x, 128, carveout=bad)


def test_negative_zero_keeps_its_sign():
    """-0 gives code 0x80 as IEEE division and the CPU reference do (the Triton kernel gives 0x00)."""
    _ext()
    x = _x(2, 256, torch.bfloat16, seed=1).clone()
    x[0, 3] = -0.0
    x[1, :128] = -0.0  # a whole group of -0: scale 1e-10 / 448, codes 0x80
    q, s = ops.per_token_group_quant_fp8(x, 128, backend="cuda")
    assert int(_bits(q)[0, 3]) == 0x80
    assert torch.all(_bits(q)[1, :128] == 0x80)
    qr, sr = ref.per_token_group_quant_fp8_ref(x.cpu(), 128)
    assert torch.equal(_bits(q).cpu(), _bits(qr)) and torch.equal(s.cpu(), sr)


def test_graph_capture():
    _ext()
    x = _x(16, 7168, torch.bfloat16, seed=3)
    want = ops.per_token_group_quant_fp8(x, 128, backend="triton")
    ops.quant_fp8_cuda(x, 128, pdl=True, trigger="early")  # warm-up outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = ops.quant_fp8_cuda(x, 128, pdl=True, trigger="early")
    g.replay()
    torch.cuda.synchronize()
    _assert_same(out, want, "graph replay")
    x.copy_(_x(16, 7168, torch.bfloat16, seed=4))
    g.replay()
    torch.cuda.synchronize()
    _assert_same(out, ops.per_token_group_quant_fp8(x, 128, backend="triton"), "graph replay on new x")


def test_auto_dispatch_and_fallback(monkeypatch):
    _ext()
    calls = []
    real = ops.quant_fp8_cuda
    monkeypatch.setattr(ops, "quant_fp8_cuda", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.delenv("QLINEAR_FP8_QUANT_BACKEND", raising=False)
    x = _x(8, 7168, torch.bfloat16, seed=8, row_stride=7232)
    want = ops.per_token_group_quant_fp8(x, 128, backend="triton")
    _assert_same(ops.per_token_group_quant_fp8(x, 128), want, "auto")
    assert len(calls) == 1
    # a base 2 bytes off 16-byte alignment: the auto choice takes Triton, an explicit "cuda" raises with the reason
    xs = _x(8, 7170, torch.bfloat16, seed=9)[:, 2:]
    assert xs.data_ptr() % 16 == 4
    _assert_same(ops.per_token_group_quant_fp8(xs, 128), ops.per_token_group_quant_fp8(xs, 128, backend="triton"),
                 "fallback")
    assert len(calls) == 1
    with pytest.raises(RuntimeError, match=r"not supported \(code 2"):
        ops.per_token_group_quant_fp8(xs, 128, backend="cuda")
    assert len(calls) == 2  # the explicit choice reached the launcher, which refused
    # per-token groups (one group of K > 256 values) stay on Triton
    _assert_same(ops.per_token_quant_fp8(x), ops.per_token_quant_fp8(x, backend="triton"), "per token")
    assert len(calls) == 2
    monkeypatch.setattr(ops, "FP8_QUANT_CUDA", False)
    _assert_same(ops.per_token_group_quant_fp8(x, 128), want, "auto off")
    assert len(calls) == 2


@pytest.mark.parametrize("M", [9, 16])
def test_gemv_pair_on_either_quantizer(monkeypatch, M):
    """The Q = 1 decode path gives the same output bit for bit whichever quantizer writes the codes."""
    _ext()
    monkeypatch.setattr(ops, "FP8_EAGER_QUANT_CUDA", False)  # eager calls would all take the CUDA one
    g = torch.Generator(device=DEV).manual_seed(M)
    w = (torch.randn(2112, 7168, device=DEV, generator=g) * 60).to(FP8_E4M3)
    wsi = torch.rand(17, 56, device=DEV, generator=g) * 1e-3 + 1e-4
    x = _x(M, 7168, torch.bfloat16, seed=M)
    outs = {}
    for quantizer in ("triton", "cuda"):
        monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", quantizer)
        for trigger in ("early", "first"):
            outs[quantizer, trigger] = ops.fp8_block_gemv_cuda(x, w, wsi, config=11011114, pdl=True, quant_pdl=trigger)
    # a table row naming the CUDA quantizer, with x's lines prefetched
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "triton")
    monkeypatch.setattr(ops, "FP8_CUDA_QUANT_PREFETCH", True)
    monkeypatch.setattr(ops, "FP8_CUDA_CONFIG", {(2112, 7168): ((16, 11011114, "first", "cuda"),), None: 0})
    assert ops._cuda_quantizer(M, 2112, 7168) == "cuda"
    outs["table"] = ops.fp8_block_gemv_cuda(x, w, wsi, pdl=True)
    assert all(o is not None and torch.equal(o, outs["triton", "early"]) for o in outs.values())
    want = ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128)).float()
    rel = ((outs["table"].cpu().float() - want).norm() / want.norm()).item()
    assert rel <= 1e-2, rel


def test_binding_errors():
    C = _ext()
    x = _x(4, 256, torch.bfloat16, seed=0)
    q = torch.empty(4, 256, dtype=FP8_E4M3, device=DEV)
    s = torch.empty(4, 2, dtype=torch.float32, device=DEV)
    with pytest.raises(TypeError, match="q: expected float8_e4m3fn"):
        C.group_quant_fp8(torch.empty(4, 256, dtype=torch.uint8, device=DEV), s, x, 128, 1e-10)
    with pytest.raises(RuntimeError, match=r"scales: expected shape \[4, 2\]"):
        C.group_quant_fp8(q, torch.empty(4, 3, device=DEV), x, 128, 1e-10)
    with pytest.raises(RuntimeError, match=r"q: expected \[M_pad >= 4, 256\]"):
        C.group_quant_fp8(q[:3], s[:3], x, 128, 1e-10)
    with pytest.raises(RuntimeError, match="trigger: expected"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 7, 0)
    with pytest.raises(RuntimeError, match="threads: expected"):
        C.group_quant_fp8(q, s, x, 128, 1e-10, True, 0, 48)
    with pytest.raises(RuntimeError, match=r"not supported \(code 1"):
        C.group_quant_fp8(q, torch.empty(4, 3, device=DEV), x, 96, 1e-10)
    assert C.group_quant_fp8_supported(q, s, x, 128) == 0
    xt = _x(256, 4, torch.bfloat16, seed=2).t()
    with pytest.raises(RuntimeError, match=r"x: expected stride\(1\) == 1"):
        C.group_quant_fp8(q, s, xt, 128, 1e-10)
    with pytest.raises(RuntimeError, match="q: expected a tensor on"):
        C.group_quant_fp8(q.cpu(), s, x, 128, 1e-10)


@pytest.mark.parametrize("M", [65, 130, 1024])
def test_scaled_mm_path_quantizer(monkeypatch, M):
    """The scaled_mm path quantizes x (padded rows, column-major scales) on the CUDA quantizer where it applies:
    the same output as on the Triton one, bit for bit, and the GEMM of the same quantized operands within 1e-2."""
    _ext()
    g = torch.Generator(device=DEV).manual_seed(M)
    w = (torch.randn(576, 7168, device=DEV, generator=g) * 60).to(FP8_E4M3)
    wsi = torch.rand(5, 56, device=DEV, generator=g) * 1e-3 + 1e-4
    x = _x(M, 7168, torch.bfloat16, seed=M)
    if not ops._scaled_mm_block_ok(x, w, (128, 128), wsi):
        pytest.skip("cuBLAS blockwise FP8 needs sm_90, CUDA >= 12.9 and these shapes")
    calls = []
    real = ops.quant_fp8_cuda
    monkeypatch.setattr(ops, "quant_fp8_cuda", lambda *a, **k: calls.append(k.get("pad_rows_to")) or real(*a, **k))
    got = ops.fp8_block_linear(x, w, wsi, backend="scaled_mm")
    assert calls == [4]
    monkeypatch.setattr(ops, "FP8_QUANT_CUDA", False)
    want = ops.fp8_block_linear(x, w, wsi, backend="scaled_mm")
    assert calls == [4] and torch.equal(got, want)
    ref_out = ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128)).float()
    assert ((got.cpu().float() - ref_out).norm() / ref_out.norm()).item() <= 1e-2


@pytest.mark.parametrize("N,K,M", [(2112, 7168, 9), (2112, 7168, 16), (2112, 7168, 48), (24576, 1536, 16),
                                   (7168, 16384, 16), (576, 7168, 12)])
def test_eager_calls_take_the_cuda_quantizer(monkeypatch, N, K, M):
    """FP8_EAGER_QUANT_CUDA: an eager fp8_block_linear on the decode pair or the Triton GEMM path launches the CUDA
    quantizer; the same call captured in a CUDA graph launches the one its table row names (the CUDA one only on a
    decode pair whose FP8_CUDA_CONFIG row says "cuda", e.g. 2112x7168 at M = 9-16); outputs equal bit for bit, and
    equal to the eager call with the switch off."""
    _ext()
    g = torch.Generator(device=DEV).manual_seed(N + M)
    w = (torch.randn(N, K, device=DEV, generator=g) * 60).to(FP8_E4M3)
    wsi = torch.rand((N + 127) // 128, K // 128, device=DEV, generator=g) * 1e-3 + 1e-4
    x = _x(M, K, torch.bfloat16, seed=M + 1)
    backend = ops.fp8_block_backend(x, w, (128, 128), wsi)
    assert backend in ("cuda", "triton"), backend
    code = ops._cuda_config(M, N, K)
    # 1 when the captured call is a decode pair whose row names the CUDA quantizer
    row_cuda = int(backend == "cuda" and code // ops._CUDA_PREQ % 10 == 1 and ops._cuda_quantizer(M, N, K) == "cuda")
    calls = []
    real = ops.quant_fp8_cuda
    monkeypatch.setattr(ops, "quant_fp8_cuda", lambda *a, **k: calls.append(1) or real(*a, **k))
    eager = ops.fp8_block_linear(x, w, wsi)
    assert len(calls) == 1, (backend, calls)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ops.fp8_block_linear(x, w, wsi)  # the side stream's workspace, outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ops.fp8_block_linear(x, w, wsi)
    assert len(calls) == 2 + row_cuda, (calls, row_cuda)  # the side-stream warm-up, and the row's own choice
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)
    monkeypatch.setattr(ops, "FP8_EAGER_QUANT_CUDA", False)
    assert torch.equal(ops.fp8_block_linear(x, w, wsi), eager)
    assert len(calls) == 2 + 2 * row_cuda
    want = ref.fp8_block_linear_ref(x.cpu(), w.cpu(), wsi.cpu(), (128, 128)).float()
    rel = ((eager.cpu().float() - want).norm() / want.norm()).item()
    assert rel <= 1e-2, rel
