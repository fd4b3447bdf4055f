"""Stream-K without a GPU, as tools/probes/probe_streamk.py keeps it (it left lesson 32 when it lost on every shape it
was timed on): the split of the K steps (every step summed once, by one program), its launcher's grid and workspace,
the host model's order of stores and acquires across programs, the probe's own host-model and compile checks, and the
mistakes that the host model must still reject (the plants lesson 32 had for it). The dispatcher no longer offers
stream-K: a table written when it did (STREAM_K: 0 in every entry) still loads, and one that asks for it is refused."""
import importlib.util
import json

import numpy as np
import pytest
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.course import repo_root
from gluon_course.nvidia import dispatch

PROBE = repo_root() / "tools" / "probes" / "probe_streamk.py"


def _load(path=PROBE, name="probe_streamk"):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def probe():
    return _load()


def _units(tiles, k_steps, programs, sk):
    """streamk_unit's arithmetic, in Python: each program's (tile, k0, k1, q0, q1)."""
    steps = sk * k_steps
    out = []
    for pid in range(programs):
        begin, end = pid * steps // programs, (pid + 1) * steps // programs
        touched = -(-end // k_steps) - begin // k_steps
        count = touched + (tiles - sk - pid + programs - 1) // programs
        for i in range(count):
            if i < touched:
                t = begin // k_steps + i
                q0 = ((t * k_steps + 1) * programs - 1) // steps
                q1 = ((t + 1) * k_steps * programs - 1) // steps
                out.append((pid, t, max(begin - t * k_steps, 0), min(end - t * k_steps, k_steps), q0, q1))
            else:
                out.append((pid, sk + pid + (i - touched) * programs, 0, k_steps, pid, pid))
    return out


@pytest.mark.parametrize("tiles, k_steps, sms, waves", [(96, 64, 132, 1), (192, 64, 132, 1), (192, 64, 132, 2),
                                                         (224, 64, 132, 2), (3, 7, 9, 3), (15, 4, 7, 3), (1, 1, 132, 1),
                                                         (264, 2, 132, 1), (5, 3, 2, 4)])
def test_every_k_step_is_summed_once_and_owners_agree(probe, tiles, k_steps, sms, waves):
    programs, sk = probe.streamk_grid(tiles, k_steps, sms, waves)
    assert programs <= sms and (sk == 0 or programs <= sk * k_steps)
    units = _units(tiles, k_steps, programs, sk)
    covered = np.zeros((tiles, k_steps), int)
    for pid, t, k0, k1, q0, q1 in units:
        assert k0 < k1 and q0 <= pid <= q1
        covered[t, k0:k1] += 1
    assert (covered == 1).all()
    for t in range(tiles):                           # q0..q1 are exactly the programs that touch the tile
        mine = sorted(pid for pid, tt, *_ in units if tt == t)
        q0, q1 = next((u[4], u[5]) for u in units if u[1] == t)
        assert mine == list(range(q0, q1 + 1))


def test_candidates_on_the_shapes_it_was_timed_on(probe):
    for M, N, K in probe.TIMED_SHAPES:
        found = probe.streamk_candidates(M, N, K)
        assert found and all(c["STREAM_K"] in (1, 2) and c["SPLIT_K"] == 1 and c["W_FIRST"] == 0 for c in found)
    assert all((c["BLOCK_M"], c["BLOCK_N"], c["num_warps"]) != (128, 256, 8)
               for c in probe.streamk_candidates(512, 6144, 4096))


def test_plan_grid_and_workspace_kept(probe):
    a = torch.empty(512, 4096, dtype=torch.bfloat16)
    w = torch.empty(6144, 4096, dtype=torch.bfloat16)
    c = torch.empty(512, 6144, dtype=torch.bfloat16)
    cfg = {"BLOCK_N": 128, "num_warps": 4, "STAGES": 4, "STREAM_K": 1}
    p = probe.StreamKPlan(a, w.t(), c, cfg, sms=132)
    assert p.grid == (132, 1, 1) and p.sk_tiles == 192 % 132 and p.launcher.kernel is probe.streamk_kernel
    assert p.rest[3] == p.sk_tiles
    partial, flags = p.scratch_for("cpu", 0)
    assert partial.numel() == 2 * 132 * 128 * 128 and flags.numel() == 192 and not flags.any()
    assert p.scratch_for("cpu", 0)[0] is partial                                  # reused by the next launch
    for bad, words in (({**cfg, "SPLIT_K": 2}, "splits no K"), ({**cfg, "STREAM_K": 0}, "STREAM_K=0"),
                       ({**cfg, "W_FIRST": 1}, "no L2 hint")):
        with pytest.raises(ValueError, match=words):
            probe.StreamKPlan(a, w.t(), c, bad, sms=132)
    # 4096 tiles of 64 × 64 with 12 K steps each, on as many SMs as it could use: 49152 programs × 49152 shared steps
    # pass 2³¹, the kernel's index arithmetic.
    big = (torch.empty(4096, 768, dtype=torch.bfloat16), torch.empty(4096, 768, dtype=torch.bfloat16),
           torch.empty(4096, 4096, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="int32"):
        probe.StreamKPlan(big[0], big[1].t(), big[2], {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3,
                                                      "STREAM_K": 1}, sms=2 ** 20)


def test_its_launcher_runs_in_the_host_model(probe):
    """StreamKPlan's own path (the plan, operand views, streamk_grid's programs and SK_TILES, the descriptors, the
    scratch, the kept launch) with the GPU stood in for by the host model on 5 SMs, where the ranges end inside tiles;
    called twice, so the second call runs on the counters the first left at 0."""
    from gluon_course.model import gemm as model_gemm

    for cfg in ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3, "STREAM_K": 3},
                {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3, "SWAP_AB": True, "STREAM_K": 1}):
        linear = probe.StreamKLinear(cfg)
        assert model_gemm.check_launcher(lambda a, b, c: linear(a, b, c), ((129, 200, 200), (17, 136, 392)),
                                         b_layout="col", sms=5, calls=2) is None, cfg


@pytest.mark.probe
def test_the_probes_host_model_and_compile_checks_pass(probe):
    """The host model on every path; the compile check on two shapes whose 5 configurations (4 tiles, 1 swap-AB)
    include the one whose listing it reads. The probe's own run compiles all 17 of the space (its --compile)."""
    assert probe.host_check() is None
    assert probe.compile_check(shapes=[(2048, 4096, 4096), (1, 128256, 4096)]) is None


# The mistakes lesson 32's plants made in its stream-K code, which the host model must still reject: (what, old, new).
PLANTS = [
    ("the partial is announced before it is stored: the last program may add what the slot held before",
     """    gl.store(partial_ptr + slot * (BLOCK_M * BLOCK_N) + tile_offsets(BLOCK_M, BLOCK_N, acc_layout), acc)
    gl.barrier()
    return gl.atomic_add(flags_ptr + tile, 1, sem="acq_rel", scope="gpu")""",
     """    arrived = gl.atomic_add(flags_ptr + tile, 1, sem="acq_rel", scope="gpu")
    gl.store(partial_ptr + slot * (BLOCK_M * BLOCK_N) + tile_offsets(BLOCK_M, BLOCK_N, acc_layout), acc)
    gl.barrier()
    return arrived"""),
    ("the last program adds the others' partials to its own sum in registers: the order of the additions depends on "
     "which program arrives last",
     """                acc = add_partials(partial_ptr, tile, q0, q1, programs, sk_steps, k_tiles, BLOCK_M, BLOCK_N,
                                   acc_layout)""",
     """                for q in range(q0, q1 + 1):
                    if q != gl.program_id(0):
                        acc += gl.load(partial_ptr + streamk_slot(q, tile, programs, sk_steps, k_tiles)
                                       * (BLOCK_M * BLOCK_N) + tile_offsets(BLOCK_M, BLOCK_N, acc_layout),
                                       cache_modifier=".cg")"""),
    ("a program's partial of its last tile goes to the slot of its first when its range touches three tiles or more",
     "return 2 * q + min(tile - (q * sk_steps // programs) // k_tiles, 1)",
     "return 2 * q + (tile - (q * sk_steps // programs) // k_tiles) % 2"),
]


@pytest.mark.parametrize("what, old, new", PLANTS, ids=[p[0][:40] for p in PLANTS])
def test_the_host_model_rejects_each_planted_mistake(tmp_path, what, old, new):
    source = PROBE.read_text(encoding="utf-8")
    assert source.count(old) == 1, what
    planted = tmp_path / "probe_streamk_planted.py"
    planted.write_text(source.replace(old, new), encoding="utf-8")
    said = _load(planted, "probe_streamk_planted").host_check()
    assert said and "in the host model" in said, (what, said)


def test_the_dispatcher_has_no_stream_k_and_reads_older_tables(tmp_path):
    assert "STREAM_K" not in dispatch.KEYS and not hasattr(dispatch, "streamk_candidates")
    for M, N, K in ((512, 6144, 4096), (64, 4096, 4096)):
        assert all("STREAM_K" not in c for c in dispatch.candidates(M, N, K) + dispatch.survey_candidates(M, N, K))
    committed = json.loads(dispatch.table_path().read_text())
    # written before it was retired: entries re-tuned while stream-K was in the space hold STREAM_K: 0
    assert any("STREAM_K" in e["config"] for e in committed["entries"])
    assert all(e["config"].get("STREAM_K", 0) == 0 for e in committed["entries"])
    table = dispatch.DispatchTable.load(dispatch.table_path())
    assert len(table.entries) == len(committed["entries"])
    assert all("STREAM_K" not in cfg for cfg in table.entries.values())
    asks = dict(committed, entries=[dict(committed["entries"][0], config={**committed["entries"][0]["config"],
                                                                            "STREAM_K": 1})])
    (tmp_path / "asks.json").write_text(json.dumps(asks))
    with pytest.raises(ValueError, match="STREAM_K=1.*probe_streamk"):
        dispatch.DispatchTable.load(tmp_path / "asks.json")


@gluon.jit
def handoff(data_ptr, flag_ptr, out_ptr, SEM: gl.constexpr):
    """Program 0 stores a value and counts it; program 1 reads it if it sees the count."""
    if gl.program_id(0) == 0:
        gl.store(data_ptr, 7.0)
        gl.barrier()
        gl.atomic_add(flag_ptr, 1, sem=SEM)
    else:
        if gl.atomic_add(flag_ptr, 0, sem=SEM) == 1:
            gl.store(out_ptr, gl.load(data_ptr))


def test_model_rejects_a_read_before_the_acquire():
    """The host model's cross-program order on its own: a load of another program's store with no acquire of a
    release after it is a race; with the atomic's acq_rel it is not."""
    from gluon_course.model import Buffer, ModelRace, Pointer, run

    def go(sem):
        bufs = [Buffer(n, np.zeros(1, np.float32), gl.float32) for n in ("data", "flag", "out")]
        bufs[1] = Buffer("flag", np.zeros(1, np.float32), gl.int32)
        run(handoff, 2, *(Pointer(b) for b in bufs), SEM=sem)
        return bufs[2].values()[0]

    assert go("acq_rel") == 7.0
    with pytest.raises(ModelRace, match="stored after every release"):
        go("relaxed")
