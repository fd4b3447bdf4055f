"""The dry parts of tools/gpu/tune_linear.py's re-tune, with the GPU's timings stood in for: the named shapes' entries
are timed beside the new candidates, replaced only when a new one is 2% faster, and the merge keeps provenance."""
import importlib.util
import json
import shutil
import time

from gluon_course.course import repo_root
from gluon_course.nvidia import dispatch


def _tool():
    spec = importlib.util.spec_from_file_location("tune_linear", repo_root() / "tools" / "gpu" / "tune_linear.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_retune_merges_named_shapes_only(tmp_path, monkeypatch):
    tool = _tool()
    table = tmp_path / "table.json"
    shutil.copy(dispatch.table_path(), table)
    before = json.loads(table.read_text())

    def fake_times(lesson, M, N, K, configs):
        # The entry (first) at 100 µs; new candidates 99 µs at 512 rows (within 2%: kept), else 50 µs (replaced).
        rows = [{key: c[key] for key in tool.ROW_KEYS} for c in configs]
        for i, r in enumerate(rows):
            r["us"] = 100.0 if i == 0 else (99.0 if M == 512 else 50.0 + i)
        return rows, 80.0

    monkeypatch.setattr(tool, "time_candidates", fake_times)
    monkeypatch.setattr(tool, "provenance", lambda started, sms: {"gpu": "stand-in", "date": "today"})
    tool.retune(str(table), str(table), [(512, 6144, 4096), (128, 4096, 4096)], 1e9, None, 132, time.time())
    after = json.loads(table.read_text())
    old = {(e["M"], e["N"], e["K"]): e for e in before["entries"]}
    new = {(e["M"], e["N"], e["K"]): e for e in after["entries"]}
    assert new[(512, 6144, 4096)]["config"] == old[(512, 6144, 4096)]["config"]          # 1% faster: kept
    first_new = dispatch.new_candidates(128, 4096, 4096)[0]
    assert new[(128, 4096, 4096)]["config"] == {k: first_new[k] for k in tool.ROW_KEYS}   # 2× faster: replaced
    assert new[(128, 4096, 4096)]["us"] == 51.0
    assert new[(128, 4096, 4096)]["retunes"][-1]["entry_us_now"] == 100.0          # this re-tune: the last
    for shape, e in old.items():
        if shape not in ((512, 6144, 4096), (128, 4096, 4096)):
            assert new[shape] == e                                                          # untouched
    retunes = after["provenance"]["retunes"]
    assert retunes[-1]["shapes"] == ["512x6144x4096", "128x4096x4096"] and retunes[-1]["replaced"] == ["128x4096x4096"]
    assert dispatch.DispatchTable.load(table).config(128, 4096, 4096)["BLOCK_N"] == first_new["BLOCK_N"]


def test_new_candidates_are_new_and_fit():
    for M, N, K in ((512, 6144, 4096), (64, 4096, 4096), (128, 14336, 4096)):
        first = {dispatch._key(c) for c in dispatch.first_candidates(M, N, K)}
        new = dispatch.new_candidates(M, N, K)
        assert new and not first & {dispatch._key(c) for c in new}
        for c in new:
            assert c["SPLIT_K"] <= -(-K // c["BLOCK_K"])
            c_bytes = c["BLOCK_M"] * c["BLOCK_N"] * 2
            assert dispatch._ring_fits(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["STAGES"], c_bytes), c


def test_deep_space_fits_and_is_what_space_deep_times(tmp_path, monkeypatch):
    # The deep rings: each fits one SM; decode shapes get only swap-AB's (a 64-row tile of A for 16 rows is waste).
    for M, N, K in ((1, 4096, 4096), (16, 4096, 14336), (64, 6144, 4096), (128, 4096, 4096)):
        deep = dispatch.deep_candidates(M, N, K)
        assert deep, (M, N, K)
        for c in deep:
            assert dispatch._ring_fits(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["STAGES"],
                                       c["BLOCK_M"] * c["BLOCK_N"] * 2), c
            assert c["SWAP_AB"] or M > 16
    assert max(c["STAGES"] for c in dispatch.deep_candidates(16, 4096, 4096)) == 16
    tool = _tool()
    table = tmp_path / "table.json"
    shutil.copy(dispatch.table_path(), table)
    timed = []

    def fake_times(lesson, M, N, K, configs):
        timed.append(configs[1:])
        return [{key: c[key] for key in tool.ROW_KEYS} | {"us": 100.0} for c in configs], 80.0

    monkeypatch.setattr(tool, "time_candidates", fake_times)
    monkeypatch.setattr(tool, "provenance", lambda started, sms: {"gpu": "stand-in", "date": "today"})
    tool.retune(str(table), str(table), [(16, 4096, 4096)], 1e9, None, 132, time.time(), space="deep")
    assert timed[0] == dispatch.deep_candidates(16, 4096, 4096)
    after = json.loads(table.read_text())
    assert after["provenance"]["retunes"][-1]["how"].endswith("beside dispatch.deep_candidates, replaced only at "
                                                              "0.98× the entry's time or less")


def test_wide_space_fits_and_is_what_space_wide_times(tmp_path, monkeypatch):
    # Wide tiles: both strips and C's two buffers fit one SM; only the plain path has a second strip; the one-wave
    # tile of 512 × 6144 × 4096 (128 × (128 + 64), 128 tiles) is among them; narrow swap-AB cuts M's power of two.
    wide = dispatch.wide_candidates(512, 6144, 4096)
    assert any((c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_N2"], c["SPLIT_K"]) == (128, 128, 64, 1) for c in wide)
    for M, N, K in ((64, 4096, 4096), (128, 6144, 4096), (512, 6144, 4096), (8192, 14336, 4096)):
        for c in dispatch.wide_candidates(M, N, K):
            width = c["BLOCK_N"] + c["BLOCK_N2"]
            assert dispatch._ring_fits(c["BLOCK_M"], width, c["BLOCK_K"], c["STAGES"], c["BLOCK_M"] * width * 2), c
            assert c["SPLIT_K"] <= -(-K // c["BLOCK_K"])
            if c["SWAP_AB"]:
                assert c["BLOCK_N2"] == 0 and 32 < M <= 128 and c["BLOCK_N"] < (1 << (M - 1).bit_length())
            else:
                assert c["BLOCK_N2"] in (64,) and c["BLOCK_N"] == 128
    assert not [c for c in dispatch.wide_candidates(16, 4096, 4096) if c["SWAP_AB"]]
    tool = _tool()
    assert "BLOCK_N2" in tool.ROW_KEYS
    table = tmp_path / "table.json"
    shutil.copy(dispatch.table_path(), table)
    timed = []

    def fake_times(lesson, M, N, K, configs):
        timed.append(configs[1:])
        return [{key: c[key] for key in tool.ROW_KEYS} | {"us": 100.0 - c["BLOCK_N2"] / 8} for c in configs], 80.0

    monkeypatch.setattr(tool, "time_candidates", fake_times)
    monkeypatch.setattr(tool, "provenance", lambda started, sms: {"gpu": "stand-in", "date": "today"})
    tool.retune(str(table), str(table), [(128, 6144, 4096)], 1e9, None, 132, time.time(), space="wide")
    assert timed[0] == dispatch.wide_candidates(128, 6144, 4096)
    after = json.loads(table.read_text())
    assert "BLOCK_N2" in after["keys"]
    entry = next(e for e in after["entries"] if (e["M"], e["N"], e["K"]) == (128, 6144, 4096))
    assert entry["config"]["BLOCK_N2"] == 64                  # 92 µs against the entry's 100: replaced
    loaded = dispatch.DispatchTable.load(table)
    assert loaded.config(128, 6144, 4096)["BLOCK_N2"] == 64


def test_a_wide_tile_plans_and_is_refused_where_the_kernel_has_none():
    import pytest
    import torch
    from gluon_course import load_solution

    mod = load_solution("32")
    a = torch.empty(512, 4096, dtype=torch.bfloat16)
    w = torch.empty(6144, 4096, dtype=torch.bfloat16)
    c = torch.empty(512, 6144, dtype=torch.bfloat16)
    plan = mod.Linear(config={"BLOCK_N": 128, "BLOCK_N2": 64, "STAGES": 4}).plan(a, w.t(), c, sms=132)
    assert plan.tiles == 4 * 32 and plan.grid == (128, 1, 1)          # 128 × 192 tiles: one wave of 132 SMs
    assert plan.blocks[3] == [64, 64] and plan.blocks[4] == [128, 64]  # the second strip's boxes of B and C
    for bad in ({"BLOCK_N2": 64, "SWAP_AB": True, "BLOCK_N": 16, "num_warps": 4}, {"BLOCK_N": 128, "BLOCK_N2": 48}):
        with pytest.raises(ValueError, match="BLOCK_N2="):
            mod.Linear(config=bad).plan(a, w.t(), c, sms=132)


def test_w_first_by_the_rule_unless_the_entry_says():
    """The dispatch module's last rule: W's copies hinted evict_first (W_FIRST = 1) for M ≤ 512, whether the
    configuration comes from an entry, the nearest entry or the shape rule; an entry's own W_FIRST wins."""
    listed = {**dispatch.BASE, "BLOCK_N": 128}
    table = dispatch.DispatchTable({(512, 4096, 4096, "nk"): listed, (2048, 4096, 4096, "nk"): listed,
                                    (2048, 6144, 4096, "nk"): {**listed, "W_FIRST": 1},
                                    (16, 4096, 4096, "nk"): {**listed, "W_FIRST": 0}})
    assert table.config(512, 4096, 4096)["W_FIRST"] == 1
    assert table.config(1024, 4096, 4096)["W_FIRST"] == 0                 # the nearest entry's, by M = 1024's rule
    assert table.config(2048, 6144, 4096)["W_FIRST"] == 1                 # the entry says so
    assert table.config(4096, 6144, 4096)["W_FIRST"] == 1                 # and the nearest entry carries it over
    assert table.config(16, 4096, 4096)["W_FIRST"] == 0
    assert table.config(8, 1000, 512)["W_FIRST"] == 1 and table.config(4096, 1000, 512)["W_FIRST"] == 0  # the rule
    assert dispatch.rule(512, 4096, 4096)["W_FIRST"] == 1 and dispatch.rule(513, 4096, 4096)["W_FIRST"] == 0


def test_w_first_reaches_the_kernel_on_w_and_is_refused_past_0_and_1():
    import pytest
    import torch
    from gluon_course import load_solution

    mod = load_solution("32")
    a = torch.empty(16, 4096, dtype=torch.bfloat16)
    w = torch.empty(4096, 4096, dtype=torch.bfloat16)
    c = torch.empty(16, 4096, dtype=torch.bfloat16)
    swapped = mod.Linear(config={"BLOCK_N": 16, "num_warps": 4, "SWAP_AB": True}).plan(a, w.t(), c, sms=132)
    assert swapped.constexprs["A_POLICY"] is mod.W_STREAMED and swapped.constexprs["B_POLICY"] is None
    big = torch.empty(2048, 4096, dtype=torch.bfloat16)
    plain = mod.Linear(config={"W_FIRST": 1}).plan(big, w.t(), torch.empty(2048, 4096, dtype=torch.bfloat16))
    assert plain.constexprs["B_POLICY"] is mod.W_STREAMED and plain.constexprs["A_POLICY"] is None
    assert mod.Linear(config={}).plan(big, w.t(), torch.empty(2048, 4096, dtype=torch.bfloat16)).config["W_FIRST"] == 0
    for bad in ({"W_FIRST": 2}, {"W_FIRST": -1}):
        with pytest.raises(ValueError, match="W_FIRST="):
            mod.Linear(config=bad).plan(big, w.t(), torch.empty(2048, 4096, dtype=torch.bfloat16))


def test_hint_space_times_the_entry_with_w_first_off_and_on(tmp_path, monkeypatch):
    """--space hint: each named shape's entry beside itself with W_FIRST 0 and 1; the one that wins by 2% is written
    into the entry (W_FIRST explicit), and the table then gives that shape that W_FIRST whatever the rule says."""
    tool = _tool()
    assert "W_FIRST" in tool.ROW_KEYS
    assert "STREAM_K" not in tool.ROW_KEYS
    table = tmp_path / "table.json"
    # The committed table, every entry's W_FIRST left to the rule (a re-tune may have written some).
    written = json.loads(dispatch.table_path().read_text())
    for e in written["entries"]:
        e["config"].pop("W_FIRST", None)
    table.write_text(json.dumps(written))
    timed = []

    def fake_times(lesson, M, N, K, configs):
        timed.append(configs)
        # the entry (W_FIRST by the rule, None here) 100 µs; W_FIRST=0 90 µs, W_FIRST=1 99 µs
        return [{key: c.get(key) for key in tool.ROW_KEYS} | {"us": {None: 100.0, 0: 90.0, 1: 99.0}[c.get("W_FIRST")]}
                for c in configs], 80.0

    monkeypatch.setattr(tool, "time_candidates", fake_times)
    monkeypatch.setattr(tool, "provenance", lambda started, sms: {"gpu": "stand-in", "date": "today"})
    tool.retune(str(table), str(table), [(1, 128256, 4096)], 1e9, None, 132, time.time(), space="hint")
    entry_cfg, off, on = timed[0]
    assert (off["W_FIRST"], on["W_FIRST"]) == (0, 1)
    assert {k: off[k] for k in tool.ROW_KEYS if k != "W_FIRST"} == {k: entry_cfg[k] for k in tool.ROW_KEYS
                                                                     if k != "W_FIRST"}
    loaded = dispatch.DispatchTable.load(table)
    assert loaded.config(1, 128256, 4096)["W_FIRST"] == 0          # 90 µs against the entry's 100: replaced
    assert loaded.config(16, 128256, 4096)["W_FIRST"] == 1         # untouched: the rule's


def test_survey_fill_tiles_fill_the_last_round_and_run_exact_in_the_host_model():
    """The wide tiles of 160 columns (dispatch.SURVEY_WIDE_FILL) are in the survey's space where they were added for:
    at 1024 × 5120 and 4096 × 1280, 128 × 160 leaves the persistent grid's last round fuller than 128 × 128 and
    128 × 192 do; the 128-row one is left out for M ≤ 32; both fit one SM. The 128-row one, unsplit and K split 3 ways,
    runs exact in the host model on an odd shape (every edge of the tile cut) with B either way, and split gives C's
    fp32 bits in every program order."""
    from gluon_course import load_solution
    from gluon_course.model import gemm as model_gemm
    from gluon_course.nvidia.cost_model import persistent_grid

    def fill(M, N, rows, cols):
        units = -(-M // rows) * -(-N // cols)
        programs, rounds = persistent_grid(units, dispatch.SMS)
        return units / (rounds * programs)

    for M, N, K in ((1024, 5120, 5120), (4096, 1280, 8192)):
        space = dispatch.survey_candidates(M, N, K)
        assert any((c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_N2"], c["SPLIT_K"]) == (128, 128, 32, 1) for c in space)
        assert fill(M, N, 128, 160) > 0.9 > max(fill(M, N, 128, 128), fill(M, N, 128, 192))
    for bm, bn, bn2, bk, stages, _ in dispatch.SURVEY_WIDE_FILL:
        assert dispatch._ring_fits(bm, bn + bn2, bk, stages, bm * (bn + bn2) * 2)
    small = dispatch.survey_candidates(16, 5120, 5120)
    assert {c["BLOCK_M"] for c in small if c["BLOCK_N2"] == 32} == {64}

    mod = load_solution("32")
    bm, bn, bn2, bk, stages, warps = dispatch.SURVEY_WIDE_FILL[0]
    for split in (1, 3):
        cfg = {**mod.CONFIG, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_N2": bn2, "BLOCK_K": bk, "STAGES": stages,
               "num_warps": warps, "SPLIT_K": split}
        for b_kn in (False, True):
            launch = model_gemm.linear_launch(mod.linear_kernel, mod.kernel_args(cfg, False, b_kn), split, False,
                                              programs=3, num_warps=warps)
            assert model_gemm.check(launch, [(129, 170, 392)], b_layout="row" if b_kn else "col") is None
    constexprs = mod.kernel_args(cfg, False, False)

    def ordered(order):
        return model_gemm.linear_launch(mod.linear_kernel, constexprs, 3, False, programs=None, num_warps=warps,
                                        order=order, c_dtype="fp32")

    assert model_gemm.same_bits_in_any_order(ordered, [(129, 170, 392)], b_layout="col") is None
