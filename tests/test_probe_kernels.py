"""The tools/probes probes' own kernels that the course's host model can run (one CTA: no cluster), exact there on
both layouts of B before any GPU time is spent on them. The model is what found the race in probe_wide_tile's first
two-buffer epilogue (five subtiles a tile through buffers picked by the subtile's place in its tile); the plant below
is that epilogue, and the model must still reject it."""
import importlib.util
from pathlib import Path

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

PROBES = Path(__file__).resolve().parent.parent / "tools" / "probes"


def _probe(name):
    spec = importlib.util.spec_from_file_location(name, PROBES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wide_tile_kernels_exact_in_the_model():
    wide = _probe("probe_wide_tile")
    assert wide.host_check()


def test_pingpong_strips_exact_and_taking_turns_in_the_model():
    from gluon_course.model import gemm as model_gemm

    strips = _probe("probe_pingpong_strips")
    assert strips.wide.host_check(strips.VARIANTS, strips.Launch, strips.BASE,
                                  rule=lambda programs: model_gemm.consumers_take_turns(programs, stores_per_tile=3))


@gluon.jit
def store_by_place(c_desc, c_smem, part, row, col, n, C_BUFFERS: gl.constexpr):
    """The plant: the first version's buffer, from the subtile's place in its tile (n mod 5), not the running count."""
    buffer = c_smem.index((n % 5) % C_BUFFERS)
    tma.store_wait(C_BUFFERS - 1)
    buffer.store(part.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [row, col], buffer)


def test_model_rejects_the_racy_two_buffer_epilogue(monkeypatch, capsys):
    wide = _probe("probe_wide_tile")
    monkeypatch.setattr(wide, "store_sub", store_by_place)
    assert not wide.host_check({"two buffers": {"C_BUFFERS": 2}})
    out = capsys.readouterr().out
    assert "overwrites c_smem[0] while a TMA store" in out and "not modelled" not in out


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
