"""A matrix product planned on cuBLASLt: descriptors and layouts made once, the heuristic's
candidate algorithms, the one chosen (the first, or the fastest once timed, kept in the
store), and the execute path.

The product is the swapped one (see :mod:`~accelmath.linalg._matmul.rules`): cuBLASLt's A is
``b^T``, its B ``a^T``, its C and D ``c^T`` and ``d^T``. Operands whose layout no operation
expresses are copied into scratch space of the per-stream workspace first. Each thread gets
its own cuBLASLt handle and matmul descriptor (the epilogue's pointers are attributes of the
descriptor, set per call); the layouts are read only, and shared.
"""

import ctypes
import functools
import logging
import math
import threading
from typing import NamedTuple, Optional

from accelmath._core import hostcall
from accelmath._core.disk import store
from accelmath._core.disk.fingerprint import fingerprint
from accelmath._core.gpu import timing
from accelmath._core.gpu.device import ensure_context
from accelmath._core.gpu.kernels import copy_scale
from accelmath._core.gpu.resources import HandleDestroyer, Resources
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import ITEMSIZE
from accelmath.bindings import cublaslt
from accelmath.errors import CudaLibraryError, InvalidArgumentError, UnsupportedDTypeError
from accelmath.linalg._matmul import rules
from accelmath.linalg._matmul.epilogue import gelu_aux_ld, relu_aux_width

__all__ = ["LtPlan", "Spec", "Layout", "aux_layout"]

_log = logging.getLogger("accelmath")

_WORKSPACE = 32 << 20  # the most workspace cuBLASLt's algorithms may ask for (Hopper's advice)
_CANDIDATES = 8  # the heuristic's candidates kept, for autotuning
_HEURISTIC = "algorithms"  # the store's namespace of the heuristic's answers
# Autotuning times each candidate over runs of a few calls back to back (the throughput of a
# loop, not of one launch), the candidates in turn round after round (their medians count:
# see timing.choose), and the heuristic's first choice keeps its place unless another
# candidate stays faster than it head to head by more than the timing's noise (_MARGIN).
_BACK_TO_BACK = 5
_MARGIN = 0.01
_ALIGN = 256
_DESC = cublaslt.MATMUL_DESC_ATTRIBUTE
_LAYOUT = cublaslt.MATRIX_LAYOUT_ATTRIBUTE
_PREF = cublaslt.MATMUL_PREFERENCE_ATTRIBUTE
_AUX_POINTER = _DESC["EPILOGUE_AUX_POINTER"]  # (set per call)
_BIAS_POINTER = _DESC["BIAS_POINTER"]
# (the copy kernel moves 2-byte elements as they are)
_COPY_DTYPE = {"bfloat16": "float16"}
# The bias gradients of cuBLASLt's A (NumPy's bgradb) are computed only where it reads A as
# stored (op N), those of its B (NumPy's bgrada) only where it reads B transposed (op T): the
# heuristic has no algorithm otherwise (seen on the H100 for every real dtype). {NumPy's
# epilogue: (the side, 0 for cuBLASLt's A or 1 for its B, the operation)}
_BIAS_GRADIENT_OP = {"bgradb": (0, "N"), "bgrada": (1, "T")}


class Layout(NamedTuple):
    """An operand's matrix layout: shape and element strides (1-D operands as matrices), and
    whether its values are the conjugate of its memory (a lazily conjugated view)."""

    shape: tuple
    strides: tuple
    conj: bool = False


class Spec(NamedTuple):
    """Everything that decides a cuBLASLt plan (hashable: the plan cache's key).

    Attributes
    ----------
    product : rules.Product
    dtype : str
    precision : rules.Precision
    epilogue : Epilogue
    a, b : Layout
    c : Layout or None
    d : tuple
        The result's matrix strides.
    aux : Layout or None
        The auxiliary input's layout (``drelu``, ``dgelu``), in elements of its dtype.
    alignment : int
        The byte alignment every operand address is assumed to have.
    """

    product: rules.Product
    dtype: str
    precision: rules.Precision
    epilogue: object
    a: Layout
    b: Layout
    c: Optional[Layout]
    d: tuple
    aux: Optional[Layout]
    alignment: int


class _Side(NamedTuple):
    """One of cuBLASLt's matrices: how it is stored, and the copy that makes it so (or
    None)."""

    stored: rules.Stored
    batch_strides: tuple
    copy: Optional[tuple]  # (shape, source strides, scratch strides, scratch offset, conj)


def aux_layout(epilogue, product, dtype, aux=None):
    """``(ld, batch strides)`` of the auxiliary matrix in cuBLASLt's elements (bits for the
    ReLU mask): the layout an auxiliary output is written in, or that of the auxiliary
    input ``aux`` (a :class:`Layout` of uint8 bytes or ``dtype`` elements), checked.

    Examples
    --------
    >>> from accelmath.linalg._matmul.epilogue import EPILOGUES
    >>> from accelmath.linalg._matmul.rules import product
    >>> aux_layout(EPILOGUES["relu_aux"], product((2, 5, 3), (3, 7)), "float16")
    (128, (640,))
    """
    kind = epilogue.makes_aux or epilogue.takes_aux
    m, n, batch = product.m, product.n, product.batch
    if kind == "relu":
        width = relu_aux_width(n)
        dense = batch + (m, width)
        if aux is not None and (aux.shape != dense or aux.strides != contiguous_strides(dense)):
            raise InvalidArgumentError(
                f"aux has shape {aux.shape} and strides {aux.strides}; {epilogue.name} takes "
                f"the packed mask relu_aux returns: uint8, C-contiguous, shape {dense}")
        return width * 8, tuple(s * 8 for s in contiguous_strides(batch + (m * width,))[:-1])
    ld = gelu_aux_ld(n)
    if aux is None:
        return ld, tuple(s * m * ld for s in contiguous_strides(batch))
    shape, strides = aux.shape, aux.strides
    if (shape != batch + (m, n) or (n > 1 and strides[-1] != 1) or strides[-2] % 8
            or strides[-2] < n or any(s < 0 for s in strides)):
        raise InvalidArgumentError(
            f"aux has shape {shape} and strides {strides}; {epilogue.name} takes the GELU "
            f"input gelu_aux returns: shape {batch + (m, n)}, unit stride along its last "
            f"axis, rows a multiple of 8 elements apart (pad the rows to {ld} elements)")
    return strides[-2], rules.own_batch_strides(shape, strides, batch)


def _side(layout, batch, transposable, offset, itemsize, op=None):
    """The :class:`_Side` of an operand of ``layout`` (its rows: the matrix's last axis) and
    the scratch bytes its copy takes (0 where it is read as it is). ``op`` ("N" or "T"), where
    given, is the operation cuBLASLt must read it with: another layout is copied into one
    read so."""
    shape, strides = layout.shape, layout.strides
    rows, cols = shape[-1], shape[-2]
    batch_strides = rules.own_batch_strides(shape, strides, batch)
    stored = rules.stored(rows, cols, strides[-1], strides[-2], layout.conj, transposable)
    if stored is not None and op in (None, stored.op):
        return _Side(stored, batch_strides, None), 0
    own = tuple(1 if s == 0 else n for n, s in zip(batch, batch_strides))
    dense = rules.dense_batch_strides(own, rows * cols)
    if op == "T":  # row-major, read transposed
        matrix, stored = (max(cols, 1), 1), rules.stored(rows, cols, max(cols, 1), 1)
    else:
        matrix, stored = (1, max(rows, 1)), rules.dense_stored(rows, cols)
    copy = (own + (rows, cols), batch_strides + (strides[-1], strides[-2]), dense + matrix,
            offset, layout.conj)
    nbytes = _aligned(math.prod(own) * rows * cols * itemsize)
    return _Side(stored, dense, copy), nbytes


def _aligned(nbytes):
    return -(-nbytes // _ALIGN) * _ALIGN


def _set(setter, obj, attribute, value):
    setter(obj, attribute, ctypes.byref(value), ctypes.sizeof(value))


class LtPlan:
    """A product planned on cuBLASLt (see the module docstring).

    Parameters
    ----------
    spec : Spec
    device_id : int
    package : str
        Whose memory pool the workspaces come from.

    Attributes
    ----------
    labels : list of str
        One stable label per candidate algorithm.
    choice : int
        The candidate used.
    stored : bool
        Whether the choice came from the store.
    mask : int
        Operand addresses with any of these bits set run through a plan of element
        alignment.
    """

    def __init__(self, spec, device_id, package):
        ensure_context(device_id)
        self.spec, self.device_id, self.package = spec, device_id, package
        prod, dtype, epilogue = spec.product, spec.dtype, spec.epilogue
        itemsize = ITEMSIZE[dtype]
        self.mask = spec.alignment - 1
        self._fallback = None
        self._lock = threading.Lock()
        self._destroy = HandleDestroyer(cublaslt.lib.destroy,
                                        desc=cublaslt.lib.matmul_desc_destroy,
                                        layout=cublaslt.lib.matrix_layout_destroy)
        self.resources = Resources(self, self._destroy, device_id, package)
        batch = prod.batch
        # cuBLASLt's A is b^T, its B a^T (see the module docstring)
        scratch = 0
        sides = []
        required = _BIAS_GRADIENT_OP.get(epilogue.name, (None, None))
        for i, (layout, transposable) in enumerate(
                ((spec.b, True), (spec.a, True), (spec.c, False))):
            if layout is None:
                sides.append(None)
                continue
            op = required[1] if i == required[0] else None
            side, nbytes = _side(layout, batch, transposable, scratch, itemsize, op)
            sides.append(side)
            scratch += nbytes
        d_side, d_bytes = _side(Layout(prod.matrix_shape, spec.d), batch, False, scratch,
                                itemsize)
        # an out= no layout expresses: the product goes to dense scratch, then into out=
        self._d_copy = None
        if d_side.copy is not None:
            shape, out_strides, dense, offset, _ = d_side.copy
            self._d_copy = (shape, dense, out_strides, offset)
            scratch += d_bytes
        sides[2] = sides[2] or d_side
        self._sides = sides
        self._copies = [(i, side.copy) for i, side in enumerate(sides) if side.copy]
        self._scratch = scratch
        self._copy_dtype = _COPY_DTYPE.get(dtype, dtype)
        # the epilogue's vectors and matrices, in cuBLASLt's units
        self._aux = None
        strides = [side.batch_strides for side in sides] + [d_side.batch_strides]
        aux_unit = 0
        if epilogue.makes_aux or epilogue.takes_aux:
            ld, aux_strides = aux_layout(epilogue, prod, dtype, spec.aux)
            self._aux = ld
            strides.append(aux_strides)
            aux_unit = itemsize if epilogue.makes_aux == "gelu" or epilogue.takes_aux == "gelu" \
                else None  # (bits: bytes are offsets // 8)
        if epilogue.bias_gradient:
            length = prod.m if epilogue.bias_gradient == "a" else prod.n
            strides.append(tuple(s * length for s in contiguous_strides(batch)))
        elif epilogue.bias:
            strides.append((0,) * len(batch))
        self._batches = rules.batches(batch, strides)
        units = [itemsize] * 4 + ([aux_unit] if self._aux is not None else []) + (
            [itemsize] if epilogue.bias or epilogue.bias_gradient else [])
        self._offsets = [tuple(o * u if u else o // 8 for o, u in zip(offsets, units))
                         for offsets in self._batches.offsets]
        self._pointers = bool(epilogue.bias or epilogue.bias_gradient or self._aux)
        # one cuBLASLt call reads the operands and writes the result where they lie
        self._direct = (not self._copies and self._d_copy is None and not self._pointers
                        and len(self._offsets) == 1 and not any(self._offsets[0]))
        self._layouts = [self._make_layout(side, dtype, self._batches.strides[i])
                         for i, side in enumerate(sides + [d_side])]
        # (a module function and plain values: the resources must not keep the plan alive)
        make_handles = functools.partial(_thread_handles, spec.precision,
                                         self._desc_attributes(), self._destroy)
        handle, desc = make_handles()
        self.resources.track(handle)
        self.resources.track(desc)
        self.resources.adopt((handle, desc))
        self._candidates = self._heuristic(handle, desc)
        # (the scratch copies follow cuBLASLt's part, aligned)
        self.workspace_bytes = _aligned(max(size for _, size in self._candidates))
        self.labels = [bytes(algo).hex() for algo, _ in self._candidates]
        known = timing.known(self.problem, self.labels, device_id, ("cublasLt",))
        self.stored = known is not None
        self.choose(known.index if known is not None else 0)
        _log.debug("matmul planned: %s: %d candidates from the heuristic, running %s",
                    self.problem, len(self.labels),
                    f"the stored choice {known.index}" if known is not None else "its first")
        self.resources.configure(make_handles, _no_binding,
                                 self.workspace_bytes + scratch)
        self._matmul = hostcall.fast(cublaslt.lib.raw("matmul")[0])
        self._set_attribute = hostcall.fast(cublaslt.lib.raw("matmul_desc_set_attribute")[0])

    # --- planning ---------------------------------------------------------------------------

    @property
    def problem(self):
        """The product as a stable string (the store's key of its autotune choice)."""
        spec = self.spec
        return (f"cublaslt m={spec.product.m} n={spec.product.n} k={spec.product.k} "
                f"dtype={spec.dtype} compute={spec.precision.compute} "
                f"epilogue={spec.epilogue.cublaslt} layouts="
                f"{[tuple(s) if s else None for s in self._sides]} "
                f"batches=({self._batches.count}, {self._batches.strides}) "
                f"aux_ld={self._aux} align={self.spec.alignment}")

    def _make_layout(self, side, dtype, batch_stride):
        layout = ctypes.c_void_p()
        stored = side.stored
        cublaslt.lib.matrix_layout_create(ctypes.byref(layout), cublaslt.DATA_TYPE[dtype],
                                          stored.rows, stored.cols, stored.ld)
        # (freed with the plan: layouts are no thread's)
        self._destroy.register(layout.value, "layout")
        self.resources.track(layout.value)
        if self._batches.count > 1:
            set_ = cublaslt.lib.matrix_layout_set_attribute
            _set(set_, layout, _LAYOUT["BATCH_COUNT"], ctypes.c_int32(self._batches.count))
            _set(set_, layout, _LAYOUT["STRIDED_BATCH_OFFSET"], ctypes.c_int64(batch_stride))
        return layout.value

    def _desc_attributes(self):
        """The matmul descriptor's attributes: ``[(attribute, ctypes value)]``."""
        epilogue = self.spec.epilogue
        a_side, b_side = self._sides[0], self._sides[1]
        attributes = [(_DESC["TRANSA"], ctypes.c_int32(cublaslt.OPERATION[a_side.stored.op])),
                      (_DESC["TRANSB"], ctypes.c_int32(cublaslt.OPERATION[b_side.stored.op]))]
        if epilogue.cublaslt == "DEFAULT":
            return attributes
        attributes.append((_DESC["EPILOGUE"],
                           ctypes.c_uint32(cublaslt.EPILOGUE[epilogue.cublaslt])))
        strides = self._batches.strides
        if self._aux is not None:
            # (a placeholder address for the heuristic; each call sets the real one)
            attributes += [(_DESC["EPILOGUE_AUX_LD"], ctypes.c_int64(self._aux)),
                           (_DESC["EPILOGUE_AUX_BATCH_STRIDE"], ctypes.c_int64(strides[4])),
                           (_AUX_POINTER, ctypes.c_void_p(_ALIGN))]
        if epilogue.bias or epilogue.bias_gradient:
            attributes += [(_DESC["BIAS_BATCH_STRIDE"], ctypes.c_int64(strides[-1])),
                           (_BIAS_POINTER, ctypes.c_void_p(_ALIGN))]
        return attributes

    def _heuristic(self, handle, desc):
        """``[(algo, workspace bytes)]``: the heuristic's candidates, best first, kept in the
        store (keyed by the problem, the GPU and cuBLASLt's version): asking the heuristic
        costs milliseconds per product shape, much of a new process's first call."""
        key = f"{self.problem}|{fingerprint(self.device_id, ('cublasLt',))}"
        kept = store.load_json(_HEURISTIC, key)
        if isinstance(kept, list) and kept:
            try:
                return [(cublaslt.MatmulAlgo.from_buffer_copy(bytes.fromhex(algo)), int(size))
                        for algo, size in kept]
            except (TypeError, ValueError):
                pass  # (not this format: asked again, and replaced)
        candidates = self._ask_heuristic(handle, desc)
        store.save_json(_HEURISTIC, key, [[bytes(algo).hex(), size] for algo, size in candidates])
        return candidates

    def _ask_heuristic(self, handle, desc):
        """The heuristic's candidates, asked of cuBLASLt."""
        spec = self.spec
        preference = ctypes.c_void_p()
        cublaslt.lib.matmul_preference_create(ctypes.byref(preference))
        try:
            set_ = cublaslt.lib.matmul_preference_set_attribute
            _set(set_, preference, _PREF["MAX_WORKSPACE_BYTES"], ctypes.c_uint64(_WORKSPACE))
            for name in ("A", "B", "C", "D"):
                _set(set_, preference, _PREF[f"MIN_ALIGNMENT_{name}_BYTES"],
                     ctypes.c_uint32(spec.alignment))
            results = (cublaslt.MatmulHeuristicResult * _CANDIDATES)()
            found = ctypes.c_int()
            la, lb, lc, ld = self._layouts
            try:
                cublaslt.lib.matmul_algo_get_heuristic(handle, desc, la, lb, lc, ld, preference,
                                                       _CANDIDATES, results, ctypes.byref(found))
            except CudaLibraryError as exc:
                raise self._unsupported(exc.status_name) from None
        finally:
            cublaslt.lib.matmul_preference_destroy(preference)
        candidates = [(cublaslt.MatmulAlgo.from_buffer_copy(r.algo), r.workspace_size)
                      for r in results[:found.value] if r.state == 0]
        if not candidates:
            raise self._unsupported("no algorithm found")
        return candidates

    def _unsupported(self, why):
        spec = self.spec
        what = ("this product" if spec.epilogue.name is None
                else f"epilogue {spec.epilogue.name!r}")
        return UnsupportedDTypeError(
            f"cuBLASLt has no algorithm for {what} on {spec.dtype} operands "
            f"(compute {spec.precision.compute}, m={spec.product.m}, n={spec.product.n}, "
            f"k={spec.product.k}): {why}; nothing else is tried in its place")

    def choose(self, index):
        """Use candidate ``index`` from now on."""
        self.choice = index
        self._algo = self._candidates[index][0]
        self._algo_ptr = ctypes.addressof(self._algo)

    def autotune(self, enqueue, stream, rounds):
        """Time the candidates (``enqueue(index)`` runs candidate ``index`` on ``stream``)
        in turn, ``rounds`` times, keep the fastest and store the choice; a choice already
        stored is taken as it is. Returns the :class:`~accelmath._core.gpu.timing.Choice`."""
        def measure(i):
            def runs():
                for _ in range(_BACK_TO_BACK):
                    enqueue(i)

            try:
                ms = timing.device_time(runs, stream, 1)
            except CudaLibraryError as exc:
                _log.info("matmul candidate %d of %s failed: %s", i, self.problem, exc)
                return float("inf")
            return ms

        choice = timing.choose(self.problem, self.labels, measure, self.device_id,
                               ("cublasLt",), rounds, keep=0, margin=_MARGIN)
        self.choose(choice.index)
        self.stored = choice.stored
        return choice

    # --- execution --------------------------------------------------------------------------

    def direct_call(self, alpha, beta, uses_c):
        """The product as one cuBLASLt call on operands where they lie, a
        :class:`~accelmath._core.hostcall.BoundCall` for the call shim's launcher (its
        operands: a, b and, where ``uses_c``, c; ``alpha`` and ``beta`` the addresses of the
        host scalars), or None where the product is more than that. It names the algorithm
        chosen now: make it again after :meth:`choose`."""
        if not self._direct:
            return None
        la, lb, lc, ld = self._layouts
        return hostcall.BoundCall(
            self._matmul, _raise_matmul,
            ("handle", "handle1", alpha, "in1", la, "in0", lb, beta, "in2" if uses_c else "out",
             lc, "out", ld, self._algo_ptr, "workspace", self.workspace_bytes, "stream"))

    def run(self, a, b, c, d, bias, aux, alpha, beta, stream, algo=None):
        """Enqueue ``d = epilogue(alpha a b + beta c)`` on ``stream`` (device addresses;
        ``c`` 0 where there is none, ``bias`` and ``aux`` 0 where the epilogue takes none;
        ``alpha`` and ``beta`` addresses of host scalars of the scale type); ``algo`` a
        candidate's index (default: the chosen one)."""
        if (a | b | c | d) & self.mask:
            return self._aligned().run(a, b, c, d, bias, aux, alpha, beta, stream, algo)
        resources = self.resources
        try:  # resources.state_on, inlined
            state = resources.local.state
        except AttributeError:
            state = resources.state_on(stream)
        if state.stream != stream:
            resources.bind(state, stream)
        handle, desc = state.handles
        workspace = state.workspace
        if self._direct and algo is None:  # one call on the operands where they lie
            status = self._matmul(handle, desc, alpha, b, self._layouts[0], a, self._layouts[1],
                                  beta, c or d, self._layouts[2], d, self._layouts[3],
                                  self._algo_ptr, workspace, self.workspace_bytes, stream)
            if status:
                cublaslt.lib.raise_status("cublasLtMatmul", status)
            return
        out = d
        if self._d_copy is not None:
            d = workspace + self.workspace_bytes + self._d_copy[3]
        ptrs = [b, a, c or d]
        for i, (shape, src, dst, offset, conj) in self._copies:
            scratch = workspace + self.workspace_bytes + offset
            copy_scale(ptrs[i], scratch, shape, src, dst, self._copy_dtype, None, stream,
                       self.device_id, conj=conj)
            ptrs[i] = scratch
        algo_ptr = self._algo_ptr if algo is None else ctypes.addressof(
            self._candidates[algo][0])
        la, lb, lc, ld = self._layouts
        pa, pb, pc = ptrs
        for offsets in self._offsets:
            if self._pointers:
                self._set_pointers(desc, bias, aux, offsets)
            status = self._matmul(handle, desc, alpha, pa + offsets[0], la, pb + offsets[1], lb,
                                  beta, pc + offsets[2], lc, d + offsets[3], ld, algo_ptr,
                                  workspace, self.workspace_bytes, stream)
            if status:
                cublaslt.lib.raise_status("cublasLtMatmul", status)
        if self._d_copy is not None:
            shape, dense, out_strides, _ = self._d_copy
            copy_scale(d, out, shape, dense, out_strides, self._copy_dtype, None, stream,
                       self.device_id)

    def _set_pointers(self, desc, bias, aux, offsets):
        set_attribute = self._set_attribute
        if self._aux is not None:
            value = ctypes.c_void_p(aux + offsets[4])
            status = set_attribute(desc, _AUX_POINTER, ctypes.addressof(value), 8)
            if status:
                cublaslt.lib.raise_status("cublasLtMatmulDescSetAttribute", status)
        if bias:
            value = ctypes.c_void_p(bias + offsets[-1])
            status = set_attribute(desc, _BIAS_POINTER, ctypes.addressof(value), 8)
            if status:
                cublaslt.lib.raise_status("cublasLtMatmulDescSetAttribute", status)

    def _aligned(self):
        """The plan of the same product for addresses of element alignment (made once)."""
        if self._fallback is None:
            with self._lock:
                if self._fallback is None:
                    spec = self.spec._replace(alignment=ITEMSIZE[self.spec.dtype])
                    if spec.alignment - 1 == self.mask:
                        raise InvalidArgumentError(
                            f"an operand of a {self.spec.dtype} product does not start at a "
                            "whole element; copy it to an array of its own")
                    self._fallback = LtPlan(spec, self.device_id, self.package)
        return self._fallback

    @property
    def nbytes(self):
        """Workspace bytes per thread and stream."""
        return self.workspace_bytes + self._scratch

    @property
    def held_bytes(self):
        """Workspace bytes held now, over every thread and stream."""
        extra = 0 if self._fallback is None else self._fallback.held_bytes
        return self.resources.held_bytes() + extra

    @property
    def on_grow(self):
        """Called with no arguments after a thread or stream takes a new workspace (the plan
        cache re-checks its byte bound), or None."""
        return self.resources.on_grow

    @on_grow.setter
    def on_grow(self, callback):
        self.resources.on_grow = callback

    def free(self):
        """Destroy the handles, descriptors and layouts; return the workspaces
        (idempotent)."""
        self.resources.free()
        if self._fallback is not None:
            self._fallback.free()


def _raise_matmul(status):
    cublaslt.lib.raise_status("cublasLtMatmul", status)


def _thread_handles(precision, attributes, destroy):
    """One thread's cuBLASLt handle and matmul descriptor (the descriptor's attributes set)."""
    handle, desc = ctypes.c_void_p(), ctypes.c_void_p()
    cublaslt.lib.create(ctypes.byref(handle))
    destroy.register(handle.value, "handle")
    try:
        cublaslt.lib.matmul_desc_create(ctypes.byref(desc),
                                        cublaslt.COMPUTE_TYPE[precision.compute],
                                        cublaslt.DATA_TYPE[precision.scale])
        destroy.register(desc.value, "desc")
        for attribute, value in attributes:
            _set(cublaslt.lib.matmul_desc_set_attribute, desc, attribute, value)
    except CudaLibraryError:
        if desc.value:
            destroy(desc.value)
        destroy(handle.value)
        raise
    return handle.value, desc.value


def _no_binding(handles, stream, workspace):
    """cuBLASLt takes the stream and the workspace in each call: nothing to bind."""
