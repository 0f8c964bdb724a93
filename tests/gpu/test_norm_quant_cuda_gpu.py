"""The CUDA backend of ``qlinear.ops.fp8.rms_norm_quant_fp8`` (csrc/norm_quant*) on a GPU, against
the fp32 reference on fresh random data: the strided q_c / kv_c slices of a [M, 2112] projection
output, contiguous rows of every kernel (fixed-size row kernel, register NV 8 / 16, two-pass,
generic), misaligned and odd shapes, other group sizes, the fused add, bf16 / fp16 / fp32, both
scale layouts, signed zeros and all-zero rows, launch configurations and the row kernel's launch
variants, CUDA-graph capture and the automatic choice. The row kernel sums squares in the same
order as the register kernel, so the two must agree bit for bit.

Codes: the kernels sum squares in another order than the reference, which can move rstd by an
ulp and a code across a rounding boundary: one e4m3 step on at most 1e-3 of the codes (at least
one) is allowed, scales to rtol 1e-5; the fused add's residual must be identical.
"""

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from qlinear._utils import FP8_E4M3, cdiv, empty_group_scales
from qlinear.ops import fp8 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
EPS = 1e-6
SCALE_EPS = 1e-10
# what the raw op reports it ran
ROW, BULK, REG8, REG16, TWO_PASS, GENERIC, CTA = 2, 3, 8, 16, 1, 0, 5
# the row kernel in either form (the per-case default may be either: row_default in the launcher)
ROWS = (ROW, BULK)
# row kernel launch variants (norm_quant_launch.cu, row_kernel_nv): 0 the per-case default, 6 the
# register form everywhere; 1 (registers) bf16 at K 512 / 1536; 4 (bulk copies, S = 3) at K 1536;
# 11, 12 (nq_slim_kernel: row_compute's values in fewer instructions) at K 512 / 1536
ROW_VARIANTS = (0, 1, 4, 6, 11, 12)
BULK_VARIANTS = (4,)
SLIM_VARIANTS = (11, 12)


_ext = cuda_ext_ops


def _inputs(M, K, dtype, *, row_stride=None, offset=0, residual=False, wdtype=None, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed * 7919 + M * 31 + K)
    width = row_stride or (K + offset)
    base = torch.randn(M, width, device=DEV, generator=g).to(dtype)
    x = base[:, offset : offset + K]
    w = (torch.rand(K, device=DEV, generator=g) + 0.5).to(wdtype or dtype)
    res = (torch.randn(M, K, device=DEV, generator=g) * 2).to(dtype) if residual else None
    return x, w, res


def _assert_close(q, s, qr, sr, what):
    assert q.dtype == FP8_E4M3 and q.shape == qr.shape, what
    assert s.shape == sr.shape and s.stride() == sr.stride(), f"{what}: scales {s.stride()} vs {sr.stride()}"
    assert torch.allclose(s, sr, rtol=1e-5, atol=0), f"{what}: scales differ, max rel {((s - sr).abs() / sr).max()}"
    diff = (q.view(torch.uint8).int() - qr.view(torch.uint8).int()).abs()
    n = int((diff > 0).sum())
    assert diff.max().item() <= 1, f"{what}: a code differs by {diff.max().item()} steps"
    assert n <= max(1, 1e-3 * diff.numel()), f"{what}: {n} of {diff.numel()} codes differ"


def _run(x, w, res, group=128, column_major=False, **cfg):
    """(q, scales, kernel) from the raw op, with explicit launch settings."""
    M, K = x.shape
    q = torch.empty((M, K), dtype=FP8_E4M3, device=DEV)
    s = empty_group_scales(M, cdiv(K, group), column_major, x.device)
    args = (q, s, x, res, w, EPS, SCALE_EPS, group, cfg.get("warps", 0), cfg.get("blocks_per_sm", 0),
            cfg.get("path", 0), cfg.get("prefetch", 0))
    if "variant" in cfg:
        used = _ext().rms_norm_quant_fp8_variant(*args, cfg["variant"])
    else:
        used = _ext().rms_norm_quant_fp8(*args)
    return q, s, used


def _check(x, w, res, group=128, column_major=False, expect=None, what="", **cfg):
    res_ref = res.clone() if res is not None else None
    q, s, used = _run(x, w, res, group, column_major, **cfg)
    qr, sr = ops.rms_norm_quant_fp8(x, w, EPS, group, residual=res_ref, column_major_scales=column_major,
                                    backend="reference")
    if res is not None:
        assert torch.equal(res, res_ref), f"{what}: residual differs"
    _assert_close(q, s, qr, sr, what)
    if expect is not None:
        # a tuple: any of those kernels
        assert used in (expect if isinstance(expect, tuple) else (expect,)), f"{what}: ran kernel {used}, expected {expect}"
    return q, s


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("width_offset", [(1536, 0), (512, 1536)], ids=["q_c", "kv_c"])
@pytest.mark.parametrize("M", [1, 7, 4099])
def test_strided_slices(M, width_offset, residual, column_major, dtype):
    width, offset = width_offset
    x, w, res = _inputs(M, width, dtype, row_stride=2112, offset=offset, residual=residual)
    assert x.stride(0) == 2112
    q, s = _check(x, w, res, column_major=column_major, what=f"M={M} K={width}")
    used = _run(x, w, res.clone() if residual else None, column_major=column_major)[2]
    assert used in (ROWS if dtype == torch.bfloat16 else (REG8,)), f"M={M} K={width}: ran kernel {used}"


def _same(a, b, what):
    (qa, sa), (qb, sb) = a, b
    assert torch.equal(qa.view(torch.uint8), qb.view(torch.uint8)), f"{what}: codes differ"
    assert torch.equal(sa, sb), f"{what}: scales differ"


# bulk variant 4: test_bulk_kernel_bit_identical; 11, 12 also in test_slim_variants_bit_identical
@pytest.mark.parametrize("variant", (0, 1, 6, 11, 12))
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("K", [512, 1024, 1536, 2048])
@pytest.mark.parametrize("M", [1, 7, 4099])
def test_row_kernel(M, K, residual, variant):
    """Every row length and launch variant of the row kernel, on strided rows (odd M: a warp whose
    rows are partly past the end): equal to the reference, and bit for bit to the register kernel
    (path=1), residual included."""
    x, w, res = _inputs(M, K, torch.bfloat16, row_stride=2112 if K <= 2048 else None, residual=residual,
                        seed=10 + variant)
    exists = variant in (0, 6) or (variant in (1, 11, 12) and K in (512, 1536))
    expect = ROWS if variant == 0 else (BULK,) if variant in BULK_VARIANTS else (ROW,)
    r_row = res.clone() if residual else None
    q, s, used = _run(x, w, r_row, column_major=True, variant=variant)
    assert used in (expect if exists else (REG8,)), f"K={K} variant={variant}: ran kernel {used}"
    res_ref = res.clone() if residual else None
    qr, sr = ops.rms_norm_quant_fp8(x, w, EPS, 128, residual=res_ref, column_major_scales=True,
                                    backend="reference")
    if residual:
        assert torch.equal(r_row, res_ref), "residual differs"
    _assert_close(q, s, qr, sr, f"row K={K} M={M} variant={variant}")
    r_vec = res.clone() if residual else None
    qv, sv, used_v = _run(x, w, r_vec, column_major=True, path=1)
    assert used_v == REG8
    _same((q, s), (qv, sv), f"row vs register kernel K={K} M={M} variant={variant}")
    if residual:
        assert torch.equal(r_row, r_vec)


@pytest.mark.parametrize("warps", [1, 3, 8])
@pytest.mark.parametrize("blocks_per_sm", [-1, 1, 0])
@pytest.mark.parametrize("K", [512, 1536])
def test_row_kernel_launch_shapes(K, warps, blocks_per_sm):
    """Grid-stride (few blocks), one step per warp (no cap) and odd warps per block compute the same."""
    x, w, _ = _inputs(3001, K, torch.bfloat16, row_stride=2112, seed=11)
    q0, s0, _ = _run(x, w, None)
    q1, s1, used = _run(x, w, None, warps=warps, blocks_per_sm=blocks_per_sm)
    assert used in ROWS
    _same((q0, s0), (q1, s1), f"warps={warps} blocks_per_sm={blocks_per_sm}")


@pytest.mark.parametrize("variant", BULK_VARIANTS)
@pytest.mark.parametrize("warps", [3, 4])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("K", [1536])
@pytest.mark.parametrize("M", [7, 3001])
def test_bulk_kernel_bit_identical(M, K, residual, warps, variant):
    """The bulk-copy form (rows staged in shared memory by cp.async.bulk, S slots per warp) equals
    the register form (variant 6) bit for bit, residual included, for any warps per block and row
    count (warps whose slots run past the end; a grid capped at the occupancy, rows grid-strided
    through each warp's ring several times)."""
    x, w, res = _inputs(M, K, torch.bfloat16, row_stride=2112, offset=2112 - K, residual=residual, seed=20 + variant)
    r6 = res.clone() if residual else None
    q6, s6, used6 = _run(x, w, r6, column_major=True, variant=6)
    assert used6 == ROW
    rb = res.clone() if residual else None
    qb, sb, used = _run(x, w, rb, column_major=True, variant=variant, warps=warps)
    assert used == BULK, f"variant={variant}: ran kernel {used}"
    _same((q6, s6), (qb, sb), f"bulk S={variant - 1} vs register row kernel K={K} M={M} warps={warps}")
    if residual:
        assert torch.equal(r6, rb), "residual differs"
    if M == 3001 and warps == 4 and variant == 4:
        _check(x, w, res, column_major=True, variant=variant, warps=warps, expect=BULK, what="bulk vs reference")


@pytest.mark.parametrize(
    "K,path,expect",
    [(1536, 0, ROWS), (2048, 0, ROWS), (1000, 0, REG8), (4096, 0, REG16), (3072, 0, REG16), (7168, 0, CTA),
     (16384, 0, CTA), (7168, 1, TWO_PASS), (16384, 1, GENERIC)],
)
@pytest.mark.parametrize("residual", [False, True])
def test_contiguous_rows_every_kernel(K, path, expect, residual):
    # 1000: a short last group (K % 128 = 104) inside the vector layout; 7168 / 16384: one block per row
    # by default; without it (path 1) the two-pass kernel, and at 16384 (weight too big for the
    # warp kernels' 48 KB stage) the generic one
    x, w, res = _inputs(263, K, torch.bfloat16, residual=residual, seed=1)
    _check(x, w, res, path=path, what=f"K={K} path={path}")
    used = _run(x, w, res.clone() if residual else None, path=path)[2]
    assert used in (expect if isinstance(expect, tuple) else (expect,)), f"K={K}: ran kernel {used}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("M", [1, 2, 16, 300])
def test_block_per_row_kernel(M, residual, dtype):
    """nq_cta_kernel (one 256-thread block per row) on the decode shapes it is the default for, strided
    rows, column-major scales, a row length that is not a multiple of the block (4224: 528 vectors, the
    last j partly past the row), a short last group (7000), explicit path 3 on a short row (1536) and a
    grid smaller than the rows (grid-strided, one block per SM); against the reference, residual
    identical."""
    wd = torch.float32 if dtype == torch.float16 else None  # fp16 x with an fp32 weight as well
    for K, stride, cm, cfg in ((7168, None, False, {}), (16384, None, True, {}), (7168, 7168 + 576, True, {}),
                               (4224, None, False, {}), (7000, None, False, {}),
                               (1536, 2112, False, {"path": 3}), (7168, None, False, {"blocks_per_sm": 1})):
        x, w, res = _inputs(M, K, dtype, row_stride=stride, residual=residual, wdtype=wd, seed=K + M)
        _check(x, w, res, column_major=cm, expect=CTA, what=f"M={M} K={K} stride={stride} {cfg}", **cfg)


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("case", ["x_offset_1", "odd_K", "odd_stride", "group_96", "group_512"])
def test_generic_fallback(case, residual):
    M, K, group, kw = 77, 1536, 128, {}
    if case == "x_offset_1":  # row pointers one element off 16-byte alignment
        kw = dict(row_stride=2112, offset=1)
    elif case == "odd_K":
        K = 1001
    elif case == "odd_stride":
        kw = dict(row_stride=1539)
    elif case == "group_96":  # 12 vectors per group: not a power of two
        group = 96
    elif case == "group_512":  # 64 vectors per group: more than a warp
        group = 512
    x, w, res = _inputs(M, K, torch.bfloat16, residual=residual, seed=2, **kw)
    _check(x, w, res, group=group, expect=GENERIC, what=case)
    if residual and case == "x_offset_1":
        # residual misaligned while x is aligned
        x2, w2, _ = _inputs(M, K, torch.bfloat16, seed=3)
        r_base = torch.randn(M, K + 1, device=DEV).to(torch.bfloat16)
        _check(x2, w2, r_base[:, 1:], expect=GENERIC, what="residual offset 1")


@pytest.mark.parametrize("group,expect", [(64, REG8), (32, REG8), (256, REG8), (8, REG8), (1536, GENERIC)])
def test_group_sizes(group, expect):
    x, w, res = _inputs(129, 1536, torch.bfloat16, row_stride=2112, seed=4)
    _check(x, w, res, group=group, expect=expect, what=f"group={group}")


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("K,expect", [(1536, TWO_PASS), (1002, GENERIC)])
def test_fp32_input(K, expect, residual):
    x, w, res = _inputs(65, K, torch.float32, residual=residual, seed=5)
    _check(x, w, res, expect=expect, what=f"fp32 K={K}")


@pytest.mark.parametrize("wdtype", [torch.float32, torch.float16])
def test_weight_dtype_differs(wdtype):
    x, w, res = _inputs(300, 1536, torch.bfloat16, row_stride=2112, wdtype=wdtype, seed=6)
    _check(x, w, res, expect=ROWS, what=f"weight {wdtype}")
    _check(x, w, res, expect=REG8, path=1, what=f"weight {wdtype}, register kernel")


@pytest.mark.parametrize("path", [0, 1, -1])
def test_signed_zeros_and_zero_rows(path):
    """-0.0 inputs must give the 0x80 code as the reference does; an all-zero row gets the floor
    scale and zero codes."""
    x, w, _ = _inputs(64, 1536, torch.bfloat16, row_stride=2112, seed=7)
    x[::3, ::5] = -0.0
    x[1::3, ::7] = 0.0
    x[5] = 0.0
    x[6, :128] = -0.0  # a whole group of -0 in a non-zero row
    q, s = _check(x, w, None, path=path, what=f"zeros path={path}")
    assert (q[6, :128].view(torch.uint8) == 0x80).all()
    assert (q[5].view(torch.uint8) == 0).all()
    # IEEE fp32 division, computed on the CPU: CUDA torch divides by a Python scalar as a multiply
    # by its reciprocal, one ulp off here (1e-10 / 448: 0x2A7B4C23 vs IEEE 0x2A7B4C22)
    floor = (torch.tensor(SCALE_EPS, dtype=torch.float32) / 448).to(DEV)
    assert torch.equal(s[5], floor.expand_as(s[5]))


def _special_rows(x):
    """NaN, +-inf, signed zeros, an all-zero row, a zero group, huge and tiny magnitudes."""
    M = x.shape[0]
    x[0, 5] = float("nan")
    if M > 1:
        x[1, 100] = float("inf")
        x[2 % M, 300] = float("-inf")
        x[3 % M] = 0.0
        x[4 % M, ::2] = -0.0
        x[5 % M] *= 1e30
        x[6 % M] *= 1e-30
        x[7 % M, 128:256] = 0.0
        x[8 % M, 256:384] = float("nan")  # a whole group of NaN: the scale floor


@pytest.mark.parametrize("variant", SLIM_VARIANTS)
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("K", [512, 1536])
@pytest.mark.parametrize("M", [1, 7, 3001, 32768])
def test_slim_variants_bit_identical(M, K, residual, special, variant):
    """nq_slim_kernel (reduce-scatter group amax, scales fetched by indexed shuffles, one scale store
    per group, 32-bit indexing) equals the register row form (variant 6) bit for bit on strided
    rows, residual included, incl. rows with NaN, +-inf, signed zeros, all zeros, a NaN group and
    huge / tiny magnitudes (codes and the scales' bit patterns); both scale layouts."""
    x, w, res = _inputs(M, K, torch.bfloat16, row_stride=2112, offset=0 if K == 1536 else 1536, residual=residual,
                        seed=40 + variant)
    if special:
        _special_rows(x)
    for column_major in (True, False) if M == 3001 else (True,):
        r6 = res.clone() if residual else None
        q6, s6, used6 = _run(x, w, r6, column_major=column_major, variant=6)
        assert used6 == ROW
        rv = res.clone() if residual else None
        q, s, used = _run(x, w, rv, column_major=column_major, variant=variant)
        what = f"variant={variant} K={K} M={M} residual={residual} special={special} cm={column_major}"
        assert used == ROW, f"{what}: ran kernel {used}"
        assert torch.equal(q6.view(torch.uint8), q.view(torch.uint8)), f"{what}: codes differ"
        assert torch.equal(s6.view(torch.int32), s.view(torch.int32)), f"{what}: scales differ"
        if residual:
            # bit patterns: torch.equal on floats is False wherever both hold NaN
            assert torch.equal(r6.view(torch.int16), rv.view(torch.int16)), f"{what}: residual differs"
    if not special and M == 3001:
        _check(x, w, res.clone() if residual else None, column_major=True, variant=variant, expect=ROW,
               what=f"variant {variant} K={K} vs reference")


@pytest.mark.parametrize("warps", [1, 3, 8])
@pytest.mark.parametrize("blocks_per_sm", [-1, 1])
@pytest.mark.parametrize("variant", SLIM_VARIANTS)
def test_slim_launch_shapes(variant, blocks_per_sm, warps):
    """Grid-stride over few blocks (a warp's rows past the end: loads clamped to the last row,
    nothing stored) and one row per warp give the same results as variant 6."""
    x, w, _ = _inputs(1001, 1536, torch.bfloat16, row_stride=2112, seed=12)
    q6, s6, _ = _run(x, w, None, variant=6)
    q, s, used = _run(x, w, None, variant=variant, warps=warps, blocks_per_sm=blocks_per_sm)
    assert used == ROW
    _same((q6, s6), (q, s), f"variant={variant} warps={warps} blocks_per_sm={blocks_per_sm}")


@pytest.mark.parametrize(
    "cfg",
    [dict(warps=4), dict(warps=16), dict(prefetch=-1), dict(prefetch=1, warps=2), dict(blocks_per_sm=-1),
     dict(blocks_per_sm=1, warps=1), dict(path=1), dict(path=1, prefetch=-1), dict(path=1, warps=16),
     dict(variant=1), dict(variant=4, warps=2), dict(variant=4, blocks_per_sm=1), dict(variant=6),
     dict(variant=6, blocks_per_sm=-1), dict(variant=11), dict(variant=11, warps=3, blocks_per_sm=1),
     dict(variant=12), dict(variant=12, blocks_per_sm=-1), dict(path=-1)],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
@pytest.mark.parametrize("residual", [False, True])
def test_launch_configs_agree(cfg, residual):
    """Every launch configuration computes each row the same way: results are identical to the
    default's (the generic path too: same formula, same per-lane sum order is not required, so it
    is compared to the reference instead)."""
    x, w, res = _inputs(4099, 1536, torch.bfloat16, row_stride=2112, residual=residual, seed=8)
    r0 = res.clone() if residual else None
    q0, s0, _ = _run(x, w, r0)
    r1 = res.clone() if residual else None
    q1, s1, used = _run(x, w, r1, **cfg)
    if cfg.get("path") == -1:
        assert used == GENERIC
        _check(x, w, res, path=-1, what="generic")
    else:
        assert used in ((REG8,) if cfg.get("path") == 1 else ROWS)
        assert torch.equal(q0.view(torch.uint8), q1.view(torch.uint8)) and torch.equal(s0, s1)
    if residual:
        assert torch.equal(r0, r1)


@pytest.mark.parametrize("residual", [False, True])
def test_public_op_auto_picks_cuda(residual):
    # 300 rows: past NORM_QUANT_TRITON_MAX_M's 256 for K = 1536 (fewer rows go to Triton)
    x, w, res = _inputs(300, 1536, torch.bfloat16, row_stride=2112, residual=residual, seed=9)
    r_auto = res.clone() if residual else None
    r_cuda = res.clone() if residual else None
    qa, sa = ops.rms_norm_quant_fp8(x, w, EPS, 128, residual=r_auto, column_major_scales=True)
    qc, sc = ops.rms_norm_quant_fp8(x, w, EPS, 128, residual=r_cuda, column_major_scales=True, backend="cuda")
    assert ops._norm_quant_gpu_default(w, 300) == "cuda" and ops._norm_quant_gpu_default(w, 33) == "triton"
    assert torch.equal(qa.view(torch.uint8), qc.view(torch.uint8)) and torch.equal(sa, sc)
    assert sc.stride() == (1, 300)
    if residual:
        assert torch.equal(r_auto, r_cuda)


def test_zero_rows():
    x = torch.empty(0, 1536, device=DEV, dtype=torch.bfloat16)
    w = torch.ones(1536, device=DEV, dtype=torch.bfloat16)
    q, s = ops.rms_norm_quant_fp8(x, w, backend="cuda")
    assert q.shape == (0, 1536) and s.shape == (0, 12)


@pytest.mark.parametrize("residual", [False, True])
def test_cuda_graph_capture(residual):
    M, K = 1024, 1536
    fused = torch.randn(M, 2112, device=DEV).to(torch.bfloat16)
    x = fused[:, :K]
    w = (torch.rand(K, device=DEV) + 0.5).to(torch.bfloat16)
    res = torch.randn(M, K, device=DEV).to(torch.bfloat16) if residual else None
    call = lambda: ops.rms_norm_quant_fp8(x, w, EPS, 128, residual=res, column_major_scales=True, backend="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        call()  # warm-up: builds / loads the extension outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q_static, s_static = call()
    fused.copy_(torch.randn(M, 2112, device=DEV).to(torch.bfloat16))
    res_before = None
    if residual:
        res.copy_(torch.randn(M, K, device=DEV).to(torch.bfloat16))
        res_before = res.clone()
    graph.replay()
    torch.cuda.synchronize()
    res_ref = res_before.clone() if residual else None
    qr, sr = ops.rms_norm_quant_fp8(x, w, EPS, 128, residual=res_ref, column_major_scales=True, backend="reference")
    if residual:
        assert torch.equal(res, res_ref)
    _assert_close(q_static, s_static, qr, sr, "graph replay")
