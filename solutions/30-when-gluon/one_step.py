# Lesson 30's one step: translated/tl_matmul_kernel_sm90.py (the translator's output for the plain-Triton GEMM,
# target sm90) with ONE change, marked "one step" below. Everything else is the translator's output as it wrote it.
#
# What changed, and why. The translation starts the accumulator in the translator's default BlockedLayout, and its
# tl_dot (hopper_helpers.tl_dot_mmav3) converts the accumulator to wgmma's layout before the product and back to the
# accumulator's own layout after it: two trips of the whole 128 × 256 fp32 accumulator (128 KiB) through shared memory
# at every K step. Started in wgmma's own layout, the accumulator never leaves it: both conversions inside tl_dot
# become conversions to the layout it already has, which cost nothing. It is converted once, after the K loop, to
# the layout the pointers of C were built in.
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
import triton.tools.triton_to_gluon_translator.hopper_helpers as helpers

@gluon.jit
def zeros(shape, dtype):
    """
    Returns a tensor filled with the scalar value 0 for the given :code:`shape` and :code:`dtype`.

    :param shape: Shape of the new array, e.g., (8, 16) or (8, )
    :type shape: tuple of ints
    :param dtype: Data-type of the new array, e.g., :code:`tl.float16`
    :type dtype: DType
    """
    return helpers.tl_full(shape, 0, dtype)


@gluon.jit
def tl_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr):
    pid = gl.program_id(0)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = pid // tiles_per_group * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + pid % tiles_per_group % group_rows
    pid_n = pid % tiles_per_group // group_rows
    offs_m = pid_m * BLOCK_M + helpers.tl_arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + helpers.tl_arange(0, BLOCK_N)
    offs_k = helpers.tl_arange(0, BLOCK_K)
    a_ptrs = a_ptr + helpers.convert_to_expand_dims_layout(offs_m, [1])[:, None] * stride_am + helpers.convert_to_expand_dims_layout(offs_k, [0])[None, :] * stride_ak
    b_ptrs = b_ptr + helpers.convert_to_expand_dims_layout(offs_k, [1])[:, None] * stride_bk + helpers.convert_to_expand_dims_layout(offs_n, [0])[None, :] * stride_bn
    # one step: the accumulator in wgmma's layout (lesson 15's: 16 rows per warp, one instruction across BLOCK_N)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, BLOCK_N, 16])
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, gl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = gl.load(a_ptrs, mask=(helpers.convert_to_expand_dims_layout(offs_m, [1])[:, None] < M) & (helpers.convert_to_expand_dims_layout(offs_k, [0])[None, :] < k_left), other=0.0)
        b = gl.load(b_ptrs, mask=(helpers.convert_to_expand_dims_layout(offs_k, [1])[:, None] < k_left) & (helpers.convert_to_expand_dims_layout(offs_n, [0])[None, :] < N), other=0.0)
        acc = helpers.tl_dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # one step: back to the layout of C's pointers, once per tile instead of twice per K step
    acc = helpers.reset_to_default_layout(acc)
    c_ptrs = c_ptr + helpers.convert_to_expand_dims_layout(offs_m, [1])[:, None] * stride_cm + helpers.convert_to_expand_dims_layout(offs_n, [0])[None, :] * stride_cn
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(helpers.convert_to_expand_dims_layout(offs_m, [1])[:, None] < M) & (helpers.convert_to_expand_dims_layout(offs_n, [0])[None, :] < N))


