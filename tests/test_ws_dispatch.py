"""Triton 3.9.0's warp-specialize dispatch in the sm_90 listings (gluon_course/nvidia/ws_dispatch.py): lessons 18 and
19 and the minimal kernel with lesson 18's ring have the shape racecheck's report names: a state word right after the
mbarriers, stored by the default warps just before the exit barrier 1 (then EXIT), and read with LDS.U8 by each
worker warp, at its own byte, just after its barrier 1. CPU only: what racecheck does with it is tools/probes/race-repro.sh."""
import pytest

from gluon_course.nvidia import ws_dispatch as w

BAR1 = w.BAR1


def _shape(k, warps):
    d = w.dispatch(k, warps)
    ins = k.instructions()
    at = {i.address: n for n, i in enumerate(ins)}
    exit_store = at[d.stores[-1][0]]
    load = at[d.load[0]]
    return d, [i.text for i in ins[exit_store + 1:exit_store + 3]], [i.text for i in ins[load - 4:load]]


@pytest.mark.parametrize("kernel", ["lesson18", "lesson19", "ring"])
def test_state_word_after_the_barriers_stored_before_the_exit_barrier(kernel):
    k, warps = w.lesson_kernel(int(kernel[-2:])) if kernel.startswith("lesson") else (w.compiled(kernel), 8)
    d, after_store, before_load = _shape(k, warps)
    assert d.past_barriers == 0                                 # the word right after the last mbarrier
    assert len(d.stores) == 2                                   # the fork's states, then the exit state
    assert after_store == [BAR1, "EXIT"]
    assert BAR1 in before_load
    assert d.load_base + warps == d.state_offset               # worker warp w reads byte w - 8 of the word


def test_lesson18_offsets():
    k, _ = w.lesson_kernel(18)
    d = w.dispatch(k, 8)
    assert (d.state_offset, d.stores[-1][0], d.load[0]) == (0x300B0, 0x2450, 0x2500)
    assert d.barrier_offsets == list(range(0x30070, 0x300B0, 8))


def test_every_minimal_kernel_has_the_dispatch():
    for name, (_, warps, _) in w.KERNELS.items():
        d = w.dispatch(w.compiled(name), warps)
        assert len(d.stores) == 2 and d.load_base + warps == d.state_offset, name


def test_lesson33_dispatch_is_what_racecheck_named():
    """The four instructions racecheck named on lesson 33's sanitizer launch (tests/test_isolated.py's LESSON33_RACE)
    are the state word's stores and the workers' load in cluster_kernel compiled as that launch compiles it."""
    from gluon_course.course import load_module_file, repo_root

    folder = next((repo_root() / "solutions").glob("33-*"))
    checks = load_module_file(str(folder / "checks.py"))
    mod = load_module_file(str(folder / "solution.py"))
    k = checks.compiled(mod, "cluster", aligned=())
    d = w.dispatch(k, int(mod.CONSUMER_WARPS))
    assert d.load[0] == 0x2A40 and {0x2640, 0x28F0, 0x29A0} <= {address for address, _ in d.stores}
    assert {"cluster_kernel+0x2a40", "cluster_kernel+0x2640"} <= w.pcs(k, int(mod.CONSUMER_WARPS), "cluster_kernel")
