"""Lesson 32's stream-K path without a GPU: the split of the K steps (every step summed once, by one program), the
host model's order of stores and acquires across programs, the launcher's grid and workspace, and the tuning
space's stream-K candidates on the shapes the recording left below 0.95× F.linear."""
import numpy as np
import pytest
import torch

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course import load_checks, load_solution
from gluon_course.nvidia import dispatch

LOW_SHAPES = ((512, 6144, 4096), (128, 4096, 4096), (128, 6144, 4096), (64, 4096, 4096), (512, 14336, 4096))


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
def test_every_k_step_is_summed_once_and_owners_agree(tiles, k_steps, sms, waves):
    programs, sk = dispatch.streamk_grid(tiles, k_steps, sms, waves)
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


def test_streamk_candidates_on_the_low_shapes():
    for M, N, K in LOW_SHAPES:
        found = dispatch.streamk_candidates(M, N, K)
        assert found and all(c["STREAM_K"] in (1, 2) and c["SPLIT_K"] == 1 for c in found)
        new = {dispatch._key(c) for c in dispatch.new_candidates(M, N, K)}
        assert {dispatch._key(c) for c in found} <= new          # the re-tune (--merge --only) times them
    assert all((c["BLOCK_M"], c["BLOCK_N"], c["num_warps"]) != (128, 256, 8)
               for c in dispatch.streamk_candidates(512, 6144, 4096))


def test_dispatch_rule_never_picks_streamk():
    table = dispatch.DispatchTable()
    for M in (1, 17, 100, 1000, 8193):
        assert table.config(M, 6144, 4096)["STREAM_K"] == 0


def test_plan_grid_and_workspace_kept():
    mod = load_solution("32")
    a = torch.empty(512, 4096, dtype=torch.bfloat16)
    w = torch.empty(6144, 4096, dtype=torch.bfloat16)
    c = torch.empty(512, 6144, dtype=torch.bfloat16)
    cfg = {**mod.CONFIG, "BLOCK_N": 128, "num_warps": 4, "STAGES": 4, "STREAM_K": 1}
    p = mod.Plan(a, w.t(), c, cfg, sms=132)
    assert p.grid == (132, 1, 1) and p.sk_tiles == 192 % 132 and p.launcher.kernel is mod.streamk_kernel
    assert p.rest[3] == p.sk_tiles
    partial, flags = p.scratch_for("cpu", 0)
    assert partial.numel() == 2 * 132 * 128 * 128 and flags.numel() == 192 and not flags.any()
    assert p.scratch_for("cpu", 0)[0] is partial                                  # reused by the next launch
    with pytest.raises(ValueError, match="does not split K as well"):
        mod.Plan(a, w.t(), c, {**cfg, "SPLIT_K": 2}, sms=132)


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


def test_streamk_checks_pass():
    mod, checks = load_solution("32"), load_checks("32")
    assert checks.streamk_host_model(mod) is None
