"""The memory-access toolkit on the CPU (strides → layout, the coalescing model) and lesson 03's plan, and the ncu wrapper."""
import itertools
import os
import stat
import sys
import textwrap

import pytest
from triton.experimental.gluon import language as gl

from gluon_course import load_solution
from gluon_course.measure import ncu
from gluon_course.memory.coalescing import lane_addresses, sectors_per_request, sectors_touched, warp_access
from gluon_course.memory.strides import (NoUnitStride, layout_along, layout_for_strides,
                                  unit_stride_axis)


# -- which axis is contiguous ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, strides, axis", [
    ((4096, 8192), (8192, 1), 1),        # row-major
    ((8192, 4096), (1, 8192), 0),        # x.T of a row-major (4096, 8192)
    ((100, 64), (128, 1), 1),            # every other row of a (200, 64) tensor
    ((100, 64), (65, 1), 1),             # a column slice of a wider tensor
    ((1, 64), (64, 1), 1),
    ((64, 1), (1, 1), 0),                # size-1 axes do not count, whatever their stride
    ((64, 1), (1, 999), 0),
    ((1, 64), (999, 1), 1),
    ((1, 1), (1, 1), 1),                 # one element: the last axis, as for row-major
    ((7,), (1,), 0),
    ((3, 4, 5), (20, 5, 1), 2),
    ((16, 16), (0, 1), 1),               # a broadcast (expanded) view still has a unit stride
])
def test_unit_stride_axis(shape, strides, axis):
    assert unit_stride_axis(shape, strides) == axis


@pytest.mark.parametrize("shape, strides", [((4, 6), (12, 2)), ((64, 64), (128, 2)), ((8, 1), (2, 1))])
def test_no_unit_stride_is_a_clear_error(shape, strides):
    with pytest.raises(NoUnitStride) as e:
        unit_stride_axis(shape, strides)
    message = str(e.value)
    assert str(tuple(strides)) in message and ".contiguous()" in message and "fast_axis=" in message
    assert isinstance(e.value, ValueError)     # launchers may catch ValueError


def test_unit_stride_axis_rejects_mismatched_tuples():
    with pytest.raises(ValueError, match="axes"):
        unit_stride_axis((4, 4), (4,))
    with pytest.raises(ValueError, match="scalar"):
        unit_stride_axis((), ())


# -- the layout along an axis ------------------------------------------------------------------------------------

def test_layout_along_axis_1_is_the_row_layout():
    layout = layout_along(1, 2, R=4, num_warps=4, warp_size=32)
    assert (layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order) == \
        ([1, 4], [1, 32], [1, 4], [1, 0])


def test_layout_along_axis_0_is_the_column_layout():
    layout = layout_along(0, 2, R=2, num_warps=8, warp_size=64)
    assert (layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order) == \
        ([2, 1], [64, 1], [8, 1], [0, 1])


def test_layout_along_1d():
    layout = layout_along(0, 1, R=4, num_warps=4)
    assert (layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order) == \
        ([4], [32], [4], [0])


@pytest.mark.parametrize("kwargs, words", [
    (dict(axis=2, rank=2), "axis 2"), (dict(axis=0, rank=3), "rank 3"), (dict(axis=0, R=3), "R=3"),
    (dict(axis=0, R=32), "R=32"), (dict(axis=0, num_warps=6), "num_warps=6"), (dict(axis=0, warp_size=16), "warp_size"),
])
def test_layout_along_refuses_impossible_layouts(kwargs, words):
    with pytest.raises(ValueError, match=words.replace("=", "=")):
        layout_along(**kwargs)


def test_layout_for_strides_follows_the_unit_stride():
    assert layout_for_strides((64, 64), (64, 1)).order == [1, 0]
    assert layout_for_strides((64, 64), (1, 64)).order == [0, 1]
    with pytest.raises(NoUnitStride):
        layout_for_strides((64, 64), (128, 2))


# -- per-lane addresses --------------------------------------------------------------------------------------------

def test_lane_addresses_row_layout_on_row_major_and_transposed():
    layout = layout_along(1, 2, R=1)
    row_major = lane_addresses(layout, [1, 128], (4096, 1))
    assert [a for _, _, a in row_major] == [4 * lane for lane in range(32)]
    assert sectors_touched([a for _, _, a in row_major]) == 4
    transposed = lane_addresses(layout, [1, 128], (1, 4096))
    assert [a for _, _, a in transposed] == [4 * 4096 * lane for lane in range(32)]
    assert sectors_touched([a for _, _, a in transposed]) == 32
    assert transposed[3][1] == (0, 3)


def test_sectors_touched_counts_an_element_that_straddles_two_sectors():
    assert sectors_touched([30], element_bytes=4) == 2
    assert sectors_touched([0, 4, 28], element_bytes=4) == 1


# -- sectors per request (layouts.sectors_per_request, verified by hand) ------------------------------------------

def _row(R, warps=4, ws=32):
    return layout_along(1, 2, R=R, num_warps=warps, warp_size=ws)


@pytest.mark.parametrize("layout, shape, strides, element_bytes, want, why", [
    (_row(1), [1, 2048], (4096, 1), 4, 4.0, "32 lanes × 4 B = 128 contiguous bytes"),
    (_row(2), [1, 2048], (4096, 1), 4, 8.0, "32 lanes × 8 B = 256 bytes"),
    (_row(4), [1, 2048], (4096, 1), 4, 16.0, "32 lanes × 16 B = 512 bytes"),
    (_row(8), [1, 2048], (4096, 1), 4, 32.0, "16-byte halves of 32-byte runs: every lane its own sector"),
    (_row(16), [1, 2048], (4096, 1), 4, 32.0, "16 bytes out of every 64: every lane its own sector"),
    (_row(1), [1, 2048], (1, 4096), 4, 32.0, "x.T: lanes 16 KiB apart"),
    (_row(4), [1, 2048], (1, 4096), 4, 32.0, "x.T: no vector, lanes 16 KiB apart"),
    (layout_along(0, 2, R=1), [2048, 1], (1, 4096), 4, 4.0, "x.T with the column layout"),
    (layout_along(0, 2, R=4), [2048, 1], (1, 4096), 4, 16.0, "x.T with the column layout, 16-byte loads"),
    (_row(1), [1, 2048], (4096, 1), 2, 2.0, "float16: 64 bytes"),
    (_row(8), [1, 4096], (8192, 1), 2, 16.0, "float16, 8 per thread: 16 bytes per lane"),
    (_row(1), [1, 2048], (4096, 1), 8, 8.0, "float64: 256 bytes"),
    (gl.BlockedLayout([1, 1], [2, 16], [4, 1], [1, 0]), [8, 16], (4096, 1), 4, 4.0,
     "two rows of 16 lanes: 64 bytes (2 sectors) in each row"),
    (_row(4), [1, 64], (4096, 1), 4, 8.0, "a tile smaller than the layout: lanes 16-31 repeat lanes 0-15"),
    (_row(1, ws=64), [1, 4096], (4096, 1), 4, 8.0, "a 64-lane AMD wavefront: 256 bytes"),
])
def test_sectors_per_request_by_hand(layout, shape, strides, element_bytes, want, why):
    assert sectors_per_request(layout, shape, strides, element_bytes=element_bytes) == want, why


def test_sectors_per_request_agrees_with_lane_addresses():
    """An independent count for single-register loads: the sectors of one register across a warp's lanes."""
    for layout, strides in itertools.product([_row(1), layout_along(0, 2, R=1)], [(4096, 1), (1, 4096), (8192, 1)]):
        shape = [1, 2048] if layout.order[0] == 1 else [2048, 1]
        counts = [sectors_touched([a for _, _, a in lane_addresses(layout, shape, strides, register=r, warp=w)])
                  for r in range(16) for w in range(4)]
        assert sectors_per_request(layout, shape, strides) == sum(counts) / len(counts)


# -- the plan of the lesson's solution ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def solution():
    return load_solution("03")


def _emulate(plan, shape):
    """Which elements the kernel's programs would touch: the same index math as copy_2d_kernel, in Python."""
    M, N = shape
    BM, BN = plan.block
    touched = []
    for pid in range(plan.grid[0]):
        if plan.axis0_tiles_first:
            tiles_m = -(-M // BM)
            tile_m, tile_n = pid % tiles_m, pid // tiles_m
        else:
            tiles_n = -(-N // BN)
            tile_m, tile_n = pid // tiles_n, pid % tiles_n
        touched += [(i, j) for i in range(tile_m * BM, tile_m * BM + BM) for j in range(tile_n * BN, tile_n * BN + BN)
                    if i < M and j < N]
    return touched


@pytest.mark.parametrize("shape", [(1, 1), (5, 33), (33, 2049), (2047, 3), (600, 7)])
@pytest.mark.parametrize("strides_of, config", [
    (lambda s: (s[1], 1), dict()), (lambda s: (1, s[0]), dict()), (lambda s: (1, s[0]), dict(R=1, rows=4)),
    (lambda s: (s[1], 1), dict(R=1, fast_axis=1, tiles_first=0)), (lambda s: (2 * s[1], 1), dict(rows=2)),
])
def test_plan_covers_every_element_once(solution, shape, strides_of, config):
    plan = solution.plan_copy(shape, strides_of(shape), **config)
    touched = _emulate(plan, shape)
    assert len(touched) == len(set(touched)) == shape[0] * shape[1]


def test_plan_refuses_a_block_that_the_layout_does_not_fill(solution):
    with pytest.raises(ValueError, match="multiple"):
        solution.plan_copy((64, 64), (64, 1), R=4, block_fast=256)
    with pytest.raises(ValueError, match="power of two"):
        solution.plan_copy((64, 64), (64, 1), rows=3)


def test_require_grid_fits_says_what_to_do(solution):
    with pytest.raises(ValueError) as e:
        solution.require_grid_fits((1, 65_536))
    assert "axis 1" in str(e.value) and "65535" in str(e.value) and "axis 0" in str(e.value)
    with pytest.raises(ValueError, match="at most 3"):
        solution.require_grid_fits((1, 1, 1, 1))
    solution.require_grid_fits((2**31 - 1, 65_535, 65_535))


def test_launcher_refuses_cpu_tensors(solution):
    import torch

    x = torch.zeros(4, 4)
    with pytest.raises(ValueError, match="cuda"):
        solution.copy_2d(x, torch.empty_like(x))


# -- the Nsight Compute wrapper -------------------------------------------------------------------------------------

LONG = textwrap.dedent('''\
    ==PROF== Connected to process 4242 (/usr/bin/python3.12)
    ==PROF== Profiling "copy_2d_kernel" - 0: 0%....50%....100% - 1 pass
    ==PROF== Disconnected from process 4242
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
    "0","4242","python3.12","127.0.0.1","copy_2d_kernel","1","7","(128, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","request","524,288"
    "0","4242","python3.12","127.0.0.1","copy_2d_kernel","1","7","(128, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","16,777,216"
    ''')

OLD_STYLE = textwrap.dedent('''\
    "ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
    "0","1","python","h","copy_2d_kernel","2025-Jan-01 00:00:00","1","7","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","Msector","2.10"
    "0","1","python","h","copy_2d_kernel","2025-Jan-01 00:00:00","1","7","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","Krequest","524.29"
    ''')

RAW = textwrap.dedent('''\
    "ID","Kernel Name","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    "","","request","sector"
    "0","copy_2d_kernel","524288","2097152"
    ''')


def test_parse_long_csv_with_noise_and_separators():
    values = ncu.parse_output(LONG, "", ncu.METRICS)
    assert values == {ncu.SECTORS: 16_777_216.0, ncu.REQUESTS: 524_288.0}
    assert values[ncu.SECTORS] / values[ncu.REQUESTS] == 32.0


def test_parse_scaled_units():
    values = ncu.parse_csv(OLD_STYLE, ncu.METRICS)
    assert values[ncu.SECTORS] == pytest.approx(2.1e6) and values[ncu.REQUESTS] == pytest.approx(524_290)


def test_parse_raw_page():
    assert ncu.parse_csv(RAW, ncu.METRICS) == {ncu.SECTORS: 2_097_152.0, ncu.REQUESTS: 524_288.0}


def test_launches_table_joins_a_launchs_metric_sets_and_names_it(tmp_path):
    """The probes' summary (``python -m gluon_course.measure.ncu --table``): one column per launch named from
    steps.txt, the metrics of two runs on the same launch (two metric sets) joined, a run with no launch said so."""
    head = LONG.splitlines()[3]
    row = '"0","1","python3.12","h","{k}","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","m","{m}","{u}","{v}"'
    (tmp_path / "ncu-1-1.csv").write_text("==PROF== noise\n" + head + "\n" +
                                          row.format(k="coop_kernel", m="gpu__time_duration.sum", u="ns", v="720,670"))
    (tmp_path / "ncu-1-2.csv").write_text(head + "\n" + row.format(k="coop_kernel", m="lts__t_sectors.sum",
                                                                   u="Msector", v="119.23"))
    (tmp_path / "ncu-2-1.csv").write_text("==WARNING== No kernels were profiled.\n")
    (tmp_path / "steps.txt").write_text("probe rc=0\nncu 1-1 (no cluster) rc=0\nncu 1-2 (no cluster) rc=0\n"
                                        "ncu 2-1 (cluster 2, W multicast) rc=1\n")
    lines = ncu.launches_table(tmp_path)
    assert lines[:2] == ["1: no cluster [coop_kernel]", "2: cluster 2, W multicast [no launch profiled]"]
    table = {line.split()[0]: line.split()[1:] for line in lines[3:]}
    assert table["gpu__time_duration.sum"] == ["7.2067e+05", "nan"]
    assert float(table["lts__t_sectors.sum"][0]) == pytest.approx(119.23e6)
    assert ncu.main(["--table", str(tmp_path)]) == 0


def test_refused_counters_are_named():
    stderr = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0.")
    with pytest.raises(ncu.NcuRefused, match="ERR_NVGPUCTRPERM"):
        ncu.parse_output("", stderr, ncu.METRICS, "copy_2d_kernel", 1)


def test_no_matching_kernel_is_named():
    with pytest.raises(ncu.NcuFailed, match="copy_2d_kernel"):
        ncu.parse_output("==PROF== Disconnected from process 1\n", "==WARNING== No kernels were profiled.",
                         ncu.METRICS, "copy_2d_kernel", 0)


def test_missing_metric_is_named():
    only_requests = "\n".join(line for line in LONG.splitlines() if "sectors" not in line)
    with pytest.raises(ncu.NcuFailed, match="l1tex__t_sectors"):
        ncu.parse_output(only_requests, "", ncu.METRICS)


def test_missing_ncu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    with pytest.raises(ncu.NcuUnavailable, match="PATH"):
        ncu.profile_launch("json:loads", ["1"], kernel="copy_2d_kernel")


def test_command_profiles_one_launch_of_the_named_kernel():
    command = ncu.ncu_command("ncu", "copy_2d_kernel", "pkg.mod:fn", ["a", 1])
    joined = " ".join(command)
    for flag in ("--clock-control none", "--target-processes all", "--kernel-name regex:copy_2d_kernel",
                 "--launch-count 1", "--csv", f"--metrics {ncu.SECTORS},{ncu.REQUESTS}"):
        assert flag in joined
    assert command[-5:] == ["-m", "gluon_course.measure.ncu", "pkg.mod:fn", "a", "1"]


FAKE_NCU = '''#!{python}
"""A stand-in for ncu: runs the profiled command, then prints what ncu would."""
import subprocess, sys
args = sys.argv[1:]
target = args[args.index("--csv") + 3:] if "--print-units" in args else args[args.index("--csv") + 1:]
run = subprocess.run(target, capture_output=True, text=True)
if run.returncode:
    sys.stderr.write(run.stderr)
    sys.exit(run.returncode)
print('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"')
print('"0","copy_2d_kernel","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","{{}}"'.format(run.stdout.strip()))
print('"0","copy_2d_kernel","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","request","2"')
'''


def test_profile_launch_end_to_end_with_a_stand_in_ncu(tmp_path, monkeypatch):
    """The subprocess plumbing: ncu's command line, `python -m gluon_course.measure.ncu module:function args`, the parse."""
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert ncu.find_ncu() == str(fake)
    # builtins:print prints its argument: the stand-in reports it as the sector count.
    values = ncu.profile_launch("builtins:print", ["64"], kernel="copy_2d_kernel", timeout=120)
    assert values == {ncu.SECTORS: 64.0, ncu.REQUESTS: 2.0}
    with pytest.raises(ncu.NcuFailed, match="exit status"):
        ncu.profile_launch("gluon_course.no_such_module:f", [], kernel="copy_2d_kernel", timeout=120)


def test_warp_access_counts_vector_width_sectors_and_efficiency():
    row_major = warp_access(layout_along(1, 2, R=4), [1, 2048], (4096, 1))
    assert (row_major.bytes_per_lane, row_major.sectors, row_major.efficiency) == (16, 16, 1.0)
    transposed = warp_access(layout_along(1, 2, R=4), [1, 2048], (1, 4096))
    assert (transposed.bytes_per_lane, transposed.sectors, transposed.efficiency) == (4, 32, 0.125)


def test_profile_launch_takes_a_file_path(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    target = tmp_path / "launcher.py"
    target.write_text("def launch(n):\n    print(int(n) * 2)\n")
    values = ncu.profile_launch(f"{target}:launch", ["16"], kernel="copy_2d_kernel", timeout=120)
    assert values[ncu.SECTORS] == 32.0


def test_launch_in_range_warms_up_then_launches_once_inside_the_range(monkeypatch):
    import torch

    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: events.append("sync"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: events.append(f"push {name}"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: events.append("pop"))
    ncu.launch_in_range(lambda: events.append("call"), warmups=2)
    assert events == ["call", "call", "sync", "push probe", "call", "pop", "sync"]


def test_kernel_events_keeps_kernels_only():
    from gluon_course.measure.device import kernel_events

    events = [{"cat": "cuda_runtime", "name": "cudaLaunchKernel", "dur": 3},
              {"cat": "kernel", "name": "nvjet_sm90_tst_256x128", "dur": 41.5,
               "args": {"grid": [132, 1, 1], "block": [384, 1, 1], "registers per thread": 168}},
              {"cat": "kernel", "name": "second", "dur": 2}]
    found = kernel_events(events)
    assert [k["name"] for k in found] == ["nvjet_sm90_tst_256x128", "second"]
    assert found[0]["grid"] == [132, 1, 1] and found[0]["registers per thread"] == 168
    assert found[0]["shared memory"] is None and found[1]["us"] == 2
