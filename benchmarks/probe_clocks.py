"""SM clock and board power while one GEMM runs back to back: bf16 ``F.linear`` against qlinear's layers.

Why: a kernel's efficiency in cycles needs the clock it ran at, and an H200 lowers its clock under load
(power, temperature). Each phase replays a CUDA graph of ``--inner`` forwards for ``--seconds`` while
``nvidia-smi -lms`` samples clocks.sm / power.draw / temperature.gpu / clocks_event_reasons.active; the
first half second of a phase is left out of its averages. Phases alternate (bf16, the layer, bf16, ...)
so that a drift in temperature shows up in both. Writes ``clocks.json`` under ``--out`` and prints one line
per phase: mean clock, power, temperature, the throttle reasons seen, and the time per forward.

    python benchmarks/probe_clocks.py --out /tmp/clk --formats w4a16 fp8-block --m 1024
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time

import torch
import torch.nn.functional as F

from _layers import build_layer

FIELDS = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def smi_id() -> str:
    """The current CUDA device as nvidia-smi names it: its PCI bus id (torch's index counts only the devices
    CUDA_VISIBLE_DEVICES shows, nvidia-smi's counts all of them), or the index where torch does not say."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if all(hasattr(props, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        return f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    return str(torch.cuda.current_device())


class Sampler:
    """nvidia-smi in loop mode; samples kept with the host time they were read at."""

    def __init__(self, period_ms: int) -> None:
        self.samples: list[tuple[float, list[str]]] = []
        self.proc = subprocess.Popen(
            ["nvidia-smi", f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits", f"-lms={period_ms}",
             f"--id={smi_id()}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.samples.append((time.monotonic(), [v.strip() for v in line.split(",")]))

    def window(self, t0: float, t1: float) -> list[list[str]]:
        return [v for t, v in self.samples if t0 <= t <= t1]

    def stop(self) -> None:
        self.proc.terminate()


def graph_of(fn, inner: int) -> torch.cuda.CUDAGraph:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    return g


def run_phase(name: str, g: torch.cuda.CUDAGraph, inner: int, seconds: float, sampler: Sampler) -> dict:
    torch.cuda.synchronize()
    t0 = time.monotonic()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 0
    start.record()
    while time.monotonic() - t0 < seconds:
        for _ in range(10):
            g.replay()
        reps += 10
        torch.cuda.synchronize()  # keeps the host's clock honest about what ran
    end.record()
    torch.cuda.synchronize()
    t1 = time.monotonic()
    rows = sampler.window(t0 + 0.5, t1)
    nums = [r for r in rows if len(r) == 4 and r[0].replace(".", "").isdigit()]
    clock = sum(float(r[0]) for r in nums) / len(nums) if nums else float("nan")
    power = sum(float(r[1]) for r in nums) / len(nums) if nums else float("nan")
    temp = sum(float(r[2]) for r in nums) / len(nums) if nums else float("nan")
    reasons = sorted({r[3] for r in nums})
    us = start.elapsed_time(end) * 1e3 / (reps * inner)
    out = {"phase": name, "samples": len(nums), "sm_clock_mhz": clock, "power_w": power, "temp_c": temp,
           "throttle_reasons": reasons, "us_per_forward": us}
    print(f"{name:28s} {us:8.2f} us/forward  SM clock {clock:7.1f} MHz  power {power:6.1f} W  "
          f"temp {temp:5.1f} C  reasons {reasons}  ({len(nums)} samples)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--formats", nargs="+", default=["w4a16"])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--n", type=int, nargs="+", default=[1536, 576], help="output sizes of the merged layer")
    ap.add_argument("--k", type=int, default=7168)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--inner", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    n = sum(args.n)
    x = torch.randn(args.m, args.k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, args.k, device="cuda", dtype=torch.bfloat16) * 0.02
    graphs = {"bf16 F.linear": graph_of(lambda: F.linear(x, w), args.inner)}
    for fmt in args.formats:
        layer = build_layer(fmt, args.k, list(args.n))
        graphs[f"qlinear {fmt}"] = graph_of(lambda layer=layer: layer(x), args.inner)
    sampler = Sampler(50)
    time.sleep(1.0)
    res = []
    for _ in range(args.rounds):
        for name, g in graphs.items():
            res.append(run_phase(name, g, args.inner, args.seconds, sampler))
    sampler.stop()
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "m": args.m, "n": n, "k": args.k,
            "inner": args.inner, "seconds": args.seconds, "fields": FIELDS}
    with open(os.path.join(args.out, "clocks.json"), "w") as f:
        json.dump({"meta": meta, "phases": res}, f, indent=1)


if __name__ == "__main__":
    main()
