"""What every device routine of the solvers shares: one call's context (device, package,
stream, result allocation), batch broadcasting, and the copies between the caller's arrays and
the solvers' dense column-major buffers.

cuSOLVER is column-major: a C-ordered matrix read in column-major order is its transpose.
Where that transpose is harmless (a symmetric or Hermitian matrix, a solve with
``trans="T"``) the copy into a solver's buffer keeps the caller's element order, the cheapest
copy; elsewhere it transposes.
"""

import logging
import math
from typing import Any, NamedTuple

import numpy

from accelmath._core.call import Context, stream_of
from accelmath._core.gpu.kernels import copy_scale
from accelmath._core.gpu.memory import host_flag, read_back_later
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE, Operand
from accelmath.bindings import driver
from accelmath.errors import InvalidArgumentError
from accelmath.linalg._checks import not_finite_error
from accelmath.linalg._device import finite as _finite
from accelmath.linalg._device.cusolver import check_codes, check_info, own_index, read_info
from accelmath.linalg._kernels import auxiliary as _kernels
from accelmath.linalg._kernels import medium as _medium
from accelmath.linalg._kernels import small as _small
from accelmath.linalg._memo import dispatcher

_log = logging.getLogger("accelmath")

__all__ = ["Context", "copy", "ITEMSIZE", "batch_of", "batch_strides", "count_of", "item_strides",
           "c_strides", "f_strides", "gather", "scatter_f", "plan", "plan_key",
           "small_fits", "run_small", "SmallCall", "CusolverCall", "layout_of", "operands_at",
           "Systems", "systems", "solution",
           "columns_in", "columns_out", "rhs_bytes", "INFO_WORDS", "info_bytes", "flagged",
           "clear_flags", "info_later", "finish_info"]


def copy(ctx, src, dst, shape, src_strides, dst_strides, conj=False, dtype=None, flags=0):
    """Enqueue a strided copy (element strides; 0 broadcasts) of a batch of matrices
    (``shape`` ends with their two axes), or of an array of any shape; with ``flags``
    (the address of an int32 per matrix), flag each matrix that holds a NaN or an
    infinity (:func:`~accelmath.linalg._kernels.auxiliary.copy_matrices`)."""
    dtype = dtype or ctx.dtype
    # matrices in C order on both sides (one run of memory, read and written along it by
    # the generic copy), no matrices, or a batch past the matrix kernels' (which they
    # take in parts, a launch each): the generic copy, unless flags are asked for
    if not flags and (len(shape) < 2 or dtype not in _kernels.DTYPES
                      or len(shape) - 2 > _kernels.MAX_BATCH_DIMS or tuple(
                          src_strides[-2:]) == tuple(dst_strides[-2:]) == (shape[-1], 1)):
        copy_scale(src, dst, shape, src_strides, dst_strides, dtype, None, ctx.stream,
                   ctx.device_id, conj=conj)
        return
    _kernels.copy_matrices(src, dst, shape[:-2], src_strides[:-2], dst_strides[:-2],
                           shape[-2], shape[-1], src_strides[-2:], dst_strides[-2:],
                           dtype, ctx.stream, ctx.device_id, conj=conj, flags_ptr=flags)


def batch_of(*ops, matrix_dims=2):
    """The broadcast batch shape of operands whose last ``matrix_dims`` axes are a matrix."""
    shapes = [tuple(op.shape[:len(op.shape) - matrix_dims]) for op in ops]
    ndim = max(len(s) for s in shapes)
    out = []
    for axis in range(ndim):
        extents = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        extents.discard(1)
        out.append(extents.pop() if extents else 1)
    return tuple(out)


def batch_strides(op, batch, core=2):
    """``op``'s strides over ``batch`` (broadcast axes: 0) followed by those of its last
    ``core`` axes (a matrix's two by default)."""
    strides = tuple(op.strides)
    own = len(op.shape) - core
    lead = []
    for axis, extent in enumerate(batch):
        k = axis - len(batch) + own
        lead.append(0 if k < 0 or op.shape[k] == 1 else strides[k])
    return tuple(lead) + strides[own:]


#: The number of matrices in a batch of shape ``batch``.
count_of = math.prod


def item_strides(batch, size):
    """Element strides of a dense C-ordered batch of items of ``size`` elements each."""
    return tuple(s * size for s in contiguous_strides(batch))


def c_strides(batch, rows, cols):
    """Element strides of a dense C-ordered batch of rows x cols matrices."""
    return item_strides(batch, rows * cols) + (cols, 1)


def f_strides(batch, rows, cols):
    """Element strides of a dense C-ordered batch of column-major rows x cols matrices."""
    return item_strides(batch, rows * cols) + (1, rows)


def gather(ctx, op, batch, dst, order, conj=False, flags=0):
    """Copy operand ``op`` (broadcast over ``batch``) into the dense buffer ``dst``: its m x n
    matrices one after another, each in ``order`` "C" (row-major: the caller's element
    order, read by cuSOLVER as the transpose) or "F" (column-major: the matrix itself);
    with ``flags``, flag those holding a NaN or an infinity (an int32 per matrix of
    ``batch`` there: :func:`clear_flags`)."""
    m, n = op.shape[-2:]
    src = batch_strides(op, batch)
    mat = (n, 1) if order == "C" else (1, m)
    dense = item_strides(batch, m * n) + mat
    copy(ctx, op.ptr, dst, batch + (m, n), src, dense, conj=conj, flags=flags)


def scatter_f(ctx, src, out, batch, m, n, conj=False, ld=None):
    """Copy column-major m x n matrices (leading dimension ``ld``, one after another) into
    the C-ordered output array at ``out``."""
    ld = m if ld is None else ld
    copy(ctx, src, out, batch + (m, n), item_strides(batch, ld * n) + (1, ld),
             c_strides(batch, m, n), conj=conj)


def plan(ctx, key, create):
    """The solver cached for problem ``key`` (and the call's dtype) on the call's device
    (a new one logged on the ``accelmath`` logger: the route and sizes its key names)."""
    def planned():
        _log.debug("linalg planned: %s, %s, on device %d", key, ctx.dtype, ctx.device_id)
        return create()

    return dispatcher.plan(ctx.device_id, plan_key(ctx, key), planned)


def plan_key(ctx, key):
    """The key :func:`plan` caches the solver of problem ``key`` under, on the call's
    device."""
    return key + (ctx.dtype,)


def small_fits(ctx, method, op, n, count):
    """Whether accelmath's own kernels take ``count`` n x n matrices of the call's dtype for
    ``op`` ("solve", "inv" or "cholesky") under ``method``: "small" up to
    :data:`accelmath.linalg._kernels.small.MAX_N` rows, as the GPU's shared memory allows; "auto"
    up to :func:`_auto_n` rows, where they measured faster:

    Measured on an H100: a lone 8 x 8 solve costs 53 us a call on them, 151 us on cuSOLVER's
    getrf and getrs; 32 x 32, 77 against 192. On an H200 (device ms, float64, on them
    against cuSOLVER's and cuBLAS's batched routes; at 80 and 100 rows the kernels alone
    against the routes with check=False): a lone 64 x 64 solve 0.096 against 0.218;
    500 x 64 x 64 solve 0.112 against 0.326, cholesky 0.080 against 0.135, inv 0.224
    against 0.318; at 80 rows, batches of 500, 2000 and 10000, solve 0.14, 0.57 and 2.66
    against 0.30, 0.91 and 3.56, cholesky 0.12, 0.48 and 2.28 against 0.14, 0.43 and 2.17;
    at 100 rows, solve 0.35, 1.39 and 6.56 against 0.48, 1.45 and 6.02, cholesky 0.33
    against 0.22 for 500; 10000 96 x 96 solves 4.44 against 6.94, cholesky 4.29 against
    2.50.
    """
    if method != "small" and (method != "auto" or n > _auto_n(op, count)):
        return False
    takes = n <= _small.WARP_N or (n <= _small.MAX_N
                                   and _medium.fits(op, n, ctx.dtype, ctx.device_id))
    if method == "small" and not takes:
        raise InvalidArgumentError(
            f'method="small" takes {ctx.dtype} matrices of at most '
            f"{_medium.largest(op, ctx.dtype, ctx.device_id)} rows on this GPU, got {n}")
    return takes


def _auto_n(op, count):
    """The most rows at which method="auto" takes accelmath's own kernels for ``count``
    matrices (as :func:`small_fits` measured): 64, and for solves 96, or 100 for batches of
    up to 1000."""
    if op != "solve":
        return 64
    return 100 if count <= 1000 else 96


def _dense_c(ctx, op, batch):
    """The address of ``op`` as a dense C-ordered batch over ``batch``: ``op`` itself where it
    is one, else a copy (returned too, to be kept alive while the work runs)."""
    m, n = op.shape[-2:]
    if tuple(op.shape) == batch + (m, n) and tuple(op.strides) == contiguous_strides(op.shape):
        return op.ptr, None
    array, ptr = ctx.empty(batch + (m, n))
    gather(ctx, op, batch, ptr, "C")
    return ptr, array


def run_small(ctx, kernel, operands, result, batch, check, message, *args, names, call=None):
    """Run one of accelmath's own kernels (:mod:`accelmath.linalg._kernels.small`) on ``operands``
    (named ``names``), each read as a dense C-ordered batch, into ``result`` (a new C-ordered
    array and its address): ``kernel(*operand addresses, result address, info, *args, dtype,
    stream, device_id, flag_ptr=)``. With ``check``, raise for the matrices that failed, and
    for those holding a NaN or an infinity (which the kernel finds as it loads them, and
    reports in their info codes, naming the operand), both of which the kernel flags in the
    thread's :func:`~accelmath._core.gpu.memory.host_flag`. ``call``
    (:func:`~accelmath.linalg._memo.call_key`'s) is remembered to lead to a
    :class:`SmallCall` where the kernel read the operands where they lie."""
    flag = host_flag() if check else None
    checked = flagged(operands, names)
    copies = [_dense_c(ctx, op, batch) for op in operands]
    info, info_ptr = ctx.empty((max(count_of(batch), 1),), "int32")
    kernel(*(ptr for ptr, _ in copies), result[1], info_ptr, *args, ctx.dtype, ctx.stream,
           ctx.device_id, flag_ptr=flag.ptr if flag else 0)
    if _remembers(call, ctx, tuple(ptr for ptr, _ in copies), operands, None):
        shape = tuple(result[0].shape)
        adapter, device_id = ctx.adapter, ctx.device_id
        dispatcher.remember(call.key, SmallCall(
            kernel, args, ctx.dtype, adapter, device_id,
            adapter.allocator(shape, contiguous_strides(shape), ctx.dtype, device_id),
            adapter.allocator(info.shape, (1,), "int32", device_id),
            adapter.stream_getter(device_id), check, batch, message, checked))
    if check:
        _check_flagged(flag, info_ptr, batch, ctx.stream, message, checked)


def _remembers(call, ctx, addresses, operands, finite):
    """Whether call ``call`` (:func:`~accelmath.linalg._memo.call_key`'s ``(key,
    addresses)``, or None) is remembered: its work read the operands where they lie (at
    ``addresses``, those of the call), the finiteness check of ``operands`` that ``finite``
    names (None: none) reads them on the device alone, and its results are not handed over
    (JAX's are: those calls run as new ones)."""
    return (call is not None and not ctx.adapter.immutable and call.addresses == addresses
            and _finite.on_device(operands, finite))


def _check_flagged(flag, info_ptr, batch, stream, message, checked):
    """Once the work on ``stream`` is done, raise for the matrices that failed or hold a NaN
    or an infinity, as their info codes say (``checked``: the kernel's operands, as
    :func:`flagged` gives them): the codes are read back only where a kernel raised
    ``flag``."""
    if flag.raised_after(stream):
        check_info(info_ptr, batch, stream, message, checked)


class SmallCall(NamedTuple):
    """What the call memo keeps of a call :func:`run_small` ran on its operands where they
    lie: the kernel and its arguments, how to allocate the result and the info codes, and
    the checks (no caller's array)."""

    kernel: Any
    args: tuple
    dtype: str
    adapter: Any
    device_id: int
    allocate: Any  # () -> (result, address)
    allocate_info: Any  # () -> (info codes, address)
    current_stream: Any  # () -> the package's current stream on the device
    check: bool
    batch: tuple
    message: str
    checked: tuple  # the operands' names and batch shapes (flagged's)

    def run(self, addresses, stream):
        """The call again, on the operands at ``addresses``, on ``stream`` (None: the
        package's current one): the new result."""
        handle, explicit = stream_of(stream, self.current_stream)
        ctx = Context.on(self.adapter, self.device_id, handle, explicit, self.dtype)
        flag = host_flag() if self.check else None
        (x, x_ptr), (info, info_ptr) = ctx.allocate(self.allocate, self.allocate_info)
        self.kernel(*addresses, x_ptr, info_ptr, *self.args, self.dtype, handle,
                    self.device_id, flag_ptr=flag.ptr if flag else 0)
        if self.check:
            _check_flagged(flag, info_ptr, self.batch, handle, self.message, self.checked)
        del info  # (held until its read back is enqueued: the pools reuse it in stream order)
        return x


class CusolverCall(NamedTuple):
    """What the call memo keeps of a stateless call that cuSOLVER (or cuBLAS) ran on its
    operands where they lie: where its solver is cached, the layout (cholesky's,
    cho_solve's, lu_solve's, solve_triangular's, eigh's, qr's: its
    ``recall(ctx, solver, addresses, results)`` enqueues the work into the
    results allocated for it and returns what the call returns), how to allocate the
    results (no caller's array)."""

    cache: Any  # the device's plan cache
    key: tuple  # the solver's key there
    layout: Any
    dtype: str
    adapter: Any
    device_id: int
    allocators: tuple  # per result: () -> (array, address)
    current_stream: Any  # () -> the package's current stream on the device

    @classmethod
    def remember(cls, call, operands, finite, ctx, key, layout, *results):
        """Remember that call ``call`` (:func:`~accelmath.linalg._memo.call_key`'s ``(key,
        addresses)``, or None: nothing) leads to the work of ``layout`` by the solver of
        problem ``key``, into new ``results`` (each ``(shape, element strides, dtype)``),
        where the call read its ``operands`` where they lie (at its addresses) and checks
        those that ``finite`` names (None: none) on the device alone. Nothing for JAX, whose
        results are handed over: those calls run as new ones."""
        adapter, device_id = ctx.adapter, ctx.device_id
        if _remembers(call, ctx, tuple(op.ptr for op in operands), operands, finite):
            dispatcher.remember(call.key, cls(
                dispatcher.cache(device_id), plan_key(ctx, key), layout, ctx.dtype, adapter,
                device_id, tuple(adapter.allocator(shape, strides, dtype, device_id)
                                 for shape, strides, dtype in results),
                adapter.stream_getter(device_id)))

    def run(self, addresses, stream):
        """The call again on the operands at ``addresses``, on ``stream`` (None: the
        package's current one): its result, or None where the solver has left the cache
        (the call then runs as a new one)."""
        solver = self.cache.get(self.key)
        if solver is None:
            return None
        handle, explicit = stream_of(stream, self.current_stream)
        ctx = Context.on(self.adapter, self.device_id, handle, explicit, self.dtype)
        return self.layout.recall(ctx, solver, addresses, ctx.allocate(*self.allocators))


def solution_of(ctx, x):
    """What :meth:`CusolverCall.remember` allocates for a call's new solution ``x``: its
    shape, C order, the call's dtype."""
    return x.shape, contiguous_strides(x.shape), ctx.dtype


def layout_of(op):
    """``(shape, strides, dtype, device_id, adapter)`` of operand ``op``, for a remembered
    call's layout (see :func:`operands_at`)."""
    return tuple(op.shape), tuple(op.strides), op.dtype, op.device_id, op.adapter


def operands_at(addresses, layouts):
    """The operands of a remembered call again: one at each address of ``addresses``, of
    the layout :func:`layout_of` gave (a tuple)."""
    return tuple(Operand(None, address, *layout) for address, layout in zip(addresses, layouts))


def solution(ctx, batch, n, k, vector):
    """``(x, address)``: a new solution of ``batch`` n x k systems (n-vectors where
    ``vector``)."""
    return ctx.empty(batch + ((n,) if vector else (n, k)))


class Systems(NamedTuple):
    """One call's systems ``a x = b``: its context, their batch, order ``n``, right-hand
    columns ``k`` and count, and their new solution ``x`` at ``x_ptr``."""

    ctx: Any
    batch: tuple
    n: int
    k: int
    count: int
    x: Any
    x_ptr: int


def systems(a, b, stream, vector, *others):
    """The :class:`Systems` of matrices ``a`` and right-hand sides ``b`` (..., n, k) on
    ``stream``, once the call's stream waits for ``others`` (more operands the work reads:
    stacks of vectors, whose batch dimensions broadcast with the systems') and ``b``."""
    ctx = Context(a, stream)
    for op in (*others, b):
        op.wait_ready(ctx.stream)
    batch = batch_of(a, b)
    if others:
        batch = tuple(numpy.broadcast_shapes(batch, *(tuple(op.shape[:-1]) for op in others)))
    n, k = b.shape[-2], b.shape[-1]
    return Systems(ctx, batch, n, k, count_of(batch), *solution(ctx, batch, n, k, vector))


def rhs_bytes(count, n, k, dtype):
    """Bytes of the column-major scratch for ``count`` n x k right-hand sides (none for one
    column: that is solved in the solution itself)."""
    return count * n * k * ITEMSIZE[dtype] if k > 1 else 0


def columns_in(ctx, b, batch, x_ptr, scratch, flags=0):
    """Copy right-hand sides ``b`` (..., n, k), column-major, where cuSOLVER solves them in
    place: the solution ``x_ptr`` itself for one column (a column is its own C order), else
    ``scratch`` (``flags``: as :func:`gather` takes them). Returns that address."""
    rhs = x_ptr if b.shape[-1] == 1 else scratch
    gather(ctx, b, batch, rhs, "F", flags=flags)
    return rhs


def columns_out(ctx, rhs, x_ptr, batch, n, k, ld=None):
    """Copy the column-major solutions at ``rhs`` (leading dimension ``ld``) into the
    solution ``x_ptr``, unless they were solved there."""
    if rhs != x_ptr:
        scatter_f(ctx, rhs, x_ptr, batch, n, k, ld=ld)


#: Words per matrix in a solver's ``"info"`` part (:func:`info_bytes`).
INFO_WORDS = 3


def info_bytes(count):
    """Bytes of a solver's ``"info"`` part for ``count`` matrices: their info codes, then,
    for each of up to two operands whose copies check them for NaN and Inf
    (:func:`clear_flags`), a flag per matrix, read back with the codes in one copy."""
    return 4 * INFO_WORDS * count


def flagged(operands, names):
    """The operands a call's copies check for NaN and Inf: ``(name, its batch shape)`` of
    each of ``operands`` (stacks of matrices), named by ``names`` (None: none)."""
    if names is None:
        return ()
    return tuple((name, tuple(op.shape[:-2])) for op, name in zip(operands, names))


def clear_flags(ctx, solver, ws, count, checked):
    """Enqueue the clearing of the finiteness flags of the operands of ``checked``
    (:func:`flagged`'s) in the solver's ``"info"`` part, after the info codes of its
    ``count`` matrices: their addresses, one per operand, for the copies to set
    (:func:`gather`), or () where none is checked."""
    if not checked:
        return ()
    first = ws + solver.offsets["info"] + 4 * count
    driver.lib.memset_d8_async(first, 0, 4 * count * len(checked), ctx.stream)
    return tuple(first + 4 * count * j for j in range(len(checked)))


def info_later(solver, ctx, ws, count, check, checked=()):
    """With ``check``, the read back of a factorization's info codes (the solver's
    ``"info"`` part, ``count`` of them, and after them the flags of the operands
    ``checked`` for NaN and Inf by their copies: :func:`flagged`'s), enqueued right after
    it, for :func:`finish_info` to wait for once the rest of the call's work is enqueued
    (the GPU busy with it meanwhile); else None."""
    if not check:
        return None
    return read_back_later(ws + solver.offsets["info"], count * (1 + len(checked)),
                           numpy.int32, ctx.stream)


def finish_info(solver, ctx, ws, batch, check, message, results, later=None, checked=()):
    """After a factorization, with ``check``: raise for NaN and Inf in the operands
    ``checked`` by their copies (:func:`flagged`'s), as their flags say, then for the
    matrices whose info code (the solver's ``"info"`` part, or its read back ``later`` of
    :func:`info_later`) says they failed. Without it, fill their ``results`` (``(address,
    elements per matrix, dtype)``) with NaN, reading nothing back."""
    info, count = ws + solver.offsets["info"], count_of(batch)
    if check:
        codes = (later.result() if later is not None
                 else read_info(info, count * (1 + len(checked)), ctx.stream))
        for j, (name, shape) in enumerate(checked):
            bad = numpy.flatnonzero(codes[count * (j + 1):count * (j + 2)])
            if bad.size:
                raise not_finite_error(name, own_index(
                    numpy.unravel_index(int(bad[0]), batch), shape))
        check_codes(codes[:count], batch, message)
        return
    for ptr, per_matrix, dtype in results:
        _kernels.fail_to_nan(info, ptr, per_matrix, count, dtype, ctx.stream, ctx.device_id)
