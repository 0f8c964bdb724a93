"""``python -m qlinear selfcheck`` end to end, in a fresh interpreter as a user runs it."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from qlinear.selfcheck import FORMATS, format_table, main

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_selfcheck_exits_zero_with_a_row_per_format(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, "-m", "qlinear", "selfcheck", "--device", "cpu", "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for name, _ in FORMATS:
        row = [line for line in lines if line.split()[:1] == [name]]
        assert len(row) == 1 and row[0].rstrip().endswith("ok"), f"{name}: {row}\n{proc.stdout}"
    assert f"{len(FORMATS)}/{len(FORMATS)} formats passed" in proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["format"] for r in rows] == [n for n, _ in FORMATS]
    assert all(r["ok"] and r["rel_error"] <= r["threshold"] == 1e-2 and r["dtype"] == "bfloat16" for r in rows)


def test_failing_row_gives_nonzero_exit(monkeypatch, capsys):
    import qlinear.selfcheck as sc

    def broken(weights, x):
        raise ModuleNotFoundError("No module named 'qlinear.testing.nope'")

    monkeypatch.setattr(sc, "FORMATS", [("unquantized-bf16", sc._unquantized), ("nope", broken)])
    assert main(["--device", "cpu", "--only", "unquantized-bf16,nope"]) == 1
    text = capsys.readouterr().out
    assert "1/2 formats passed" in text and "FAIL nope: ModuleNotFoundError" in text


def test_usage_errors(capsys):
    from qlinear.__main__ import main as cli

    assert cli([]) == 2 and "selfcheck" in capsys.readouterr().err
    assert cli(["bogus"]) == 2 and "unknown command 'bogus'" in capsys.readouterr().err
    assert cli(["--help"]) == 0 and "selfcheck" in capsys.readouterr().out
    assert format_table([]).splitlines()[-1] == "0/0 formats passed"
