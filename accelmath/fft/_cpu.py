"""The CPU backend: transforms of host arrays, for the functions and for the FFT plans.

NumPy arrays run on SciPy's own FFT engine (pocketfft; ducc in newer SciPy), called directly:
never through ``scipy.fft``'s backend dispatch, so a global or ``only=True`` SciPy backend
(accelmath's own included) does not reach here. Each dtype computes in its own precision,
long double included, as ``numpy.fft`` does; half precision in single, as ``scipy.fft`` does.
Where SciPy or its engine module is missing, ``numpy.fft`` stands in. CPU torch tensors run on
torch's own FFT (``torch.fft``), or, for small transforms where that engine measured faster
(its fixed cost a call is lower), on the engine over NumPy views of the tensors
(:class:`TorchViaHost`): the two are timed once a process for each transform.

A transform is prepared once for a shape and dtype (:func:`host_transform`; the stateless
functions remember it per call, a plan holds it) and executed many times.
"""

import importlib
import logging
import math
import os
import time

import numpy

from accelmath.fft._normalize import (complex_dtype, real_dtype, scale_exponent, swap_norm,
                                      transform_dtypes)

__all__ = ["HostTransform", "TorchTransform", "TorchViaHost", "host_transform", "engine"]

_log = logging.getLogger("accelmath")

# SciPy's engine modules, newest layout first; each has c2c(a, axes, forward, inorm, out,
# nthreads), r2c(the same) and c2r(a, axes, lastsize, forward, inorm, out, nthreads), where
# inorm 0, 1, 2 divides by 1, sqrt(N), N.
_ENGINE_MODULES = ("scipy.fft._duccfft.pyduccfft", "scipy.fft._pocketfft.pypocketfft")
_engines = []
_NORM_OF_INORM = ("backward", "ortho", "forward")


class _NumpyEngine:
    """``numpy.fft`` in the calling convention of SciPy's engine modules (for a SciPy without
    them). ``nthreads`` is ignored: NumPy's FFT runs on one thread."""

    name = "numpy.fft"

    @staticmethod
    def _into(r, out):
        if out is None:
            return r
        out[...] = r
        return out

    def c2c(self, a, axes, forward, inorm, out, nthreads):
        if forward:
            r = numpy.fft.fftn(a, axes=axes, norm=_NORM_OF_INORM[inorm])
        else:
            r = numpy.fft.ifftn(a, axes=axes, norm=_NORM_OF_INORM[2 - inorm])
        return self._into(r, out)

    def r2c(self, a, axes, forward, inorm, out, nthreads):
        r = numpy.fft.rfftn(a, axes=axes, norm=_NORM_OF_INORM[inorm])
        if not forward:  # the positive exponent: the conjugate, for real input
            numpy.conjugate(r, out=r)
        return self._into(r, out)

    def c2r(self, a, axes, lastsize, forward, inorm, out, nthreads):
        s = [a.shape[axis] for axis in axes[:-1]] + [lastsize]
        r = numpy.fft.irfftn(a.conj() if forward else a, s=s, axes=axes,
                             norm=_NORM_OF_INORM[2 - inorm])
        return self._into(r, out)


def engine():
    """The module (or stand-in) that computes host transforms: SciPy's engine where found, else
    ``numpy.fft`` (its ``name`` says which)."""
    if not _engines:
        for name in _ENGINE_MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            if all(hasattr(module, f) for f in ("c2c", "r2c", "c2r")):
                _engines.append(module)
                break
        else:
            _engines.append(_NumpyEngine())
    return _engines[0]


_workers_readers = []  # the function _workers_reader found, once


def _workers_reader():
    """A function of no arguments returning the threads of a call without ``workers``:
    those ``scipy.fft.set_workers`` set in this context, else 1.

    It reads the thread-local record where ``set_workers`` keeps them (``get_workers``
    costs 0.4 us a call where none were set, an AttributeError raised and caught inside),
    where that read agrees with ``get_workers`` in and out of a ``set_workers`` context;
    else it is ``get_workers`` itself (1 without SciPy)."""
    if _workers_readers:
        return _workers_readers[0]
    try:
        from scipy.fft import get_workers, set_workers
    except ImportError:
        def get_workers():
            return 1
        read = get_workers
    else:
        record = getattr(importlib.import_module(get_workers.__module__), "_config", None)
        read = get_workers
        if record is not None and hasattr(record, "__dict__"):
            def read_record():
                return record.__dict__.get("default_workers", 1)

            with set_workers(3):
                inside = read_record() == get_workers() == 3
            if inside and read_record() == get_workers():
                read = read_record
    _workers_readers.append(read)
    return read


def _threads(workers):
    """The thread count of ``workers`` (checked: None or a nonzero int, negative ones
    counting back from the CPUs, -1 all of them)."""
    if workers is None:
        return _workers_reader()()
    return workers if workers > 0 else workers + 1 + (os.cpu_count() or 1)


def _lengths(kind, shape, axes, s):
    """(input lengths on ``axes``, output length of the halved axis of a c2r or None)."""
    lengths = [shape[a] for a in axes] if s is None else list(s)
    if kind != "c2r":
        return lengths, None
    last = lengths[-1] if s is not None else 2 * (shape[axes[-1]] - 1)
    lengths[-1] = last // 2 + 1
    return lengths, last


class HostTransform:
    """A transform of NumPy arrays of one shape and dtype, prepared once.

    Parameters
    ----------
    kind : {"c2c", "r2c", "c2r"}
        Complex-to-complex, real-to-complex (the last axis halved), complex-to-real.
    shape : tuple of int
        The inputs' shape.
    dtype : numpy.dtype or str
        The inputs' dtype: integers and bool promote to double precision, float16 to single,
        long double stays long double (as ``numpy.fft`` computes).
    axes : tuple of int
        Distinct non-negative axes; the last is the halved axis of r2c and c2r.
    s : tuple of int, optional
        Lengths, one per axis: the input is cut or zero-padded to them (c2r: the output's
        lengths, as ``numpy.fft.irfftn`` takes them). Default: the input's (c2r: an output
        of ``2 * (m - 1)`` points on the halved axis).
    norm : {"backward", "ortho", "forward"}
        The normalization (resolved: no None).
    conjugate : bool
        Conjugate the output of an r2c (``ihfft``) or the input of a c2r (``hfft``); the norm
        given is then the swapped one, as those functions pass it.

    Attributes
    ----------
    out_shape : tuple of int
    out_dtype : numpy.dtype

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.fft._cpu import HostTransform
    >>> x = np.random.default_rng(0).standard_normal((4, 6))
    >>> t = HostTransform("r2c", x.shape, x.dtype, (0, 1))
    >>> bool(np.allclose(t.execute(x), np.fft.rfft2(x))), t.out_shape
    (True, (4, 4))
    """

    def __init__(self, kind, shape, dtype, axes, s=None, norm="backward", conjugate=False):
        dtype = numpy.dtype(dtype)
        out_name = transform_dtypes(kind, dtype.name, complex32=False)[1]
        if kind == "c2c":
            # a real input runs the engine's real-input path: no complex copy of it
            in_name = out_name if dtype.kind == "c" else real_dtype(out_name)
        else:
            in_name = (real_dtype if kind == "r2c" else complex_dtype)(out_name)
        compute = numpy.dtype(in_name)
        self._convert = None if compute == dtype else compute  # (byte order too)
        lengths, self._last = _lengths(kind, shape, axes, s)
        in_shape = list(shape)
        for axis, n in zip(axes, lengths):
            in_shape[axis] = n
        in_shape = tuple(in_shape)
        self._cut = self._pad = None
        if in_shape != tuple(shape):
            common = tuple(slice(0, min(n, m)) for n, m in zip(in_shape, shape))
            if all(n <= m for n, m in zip(in_shape, shape)):
                self._cut = common
            else:
                self._pad = (in_shape, compute, common)
        out_shape = list(in_shape)
        if kind == "r2c":
            out_shape[axes[-1]] = in_shape[axes[-1]] // 2 + 1
        elif kind == "c2r":
            out_shape[axes[-1]] = self._last
        self.kind, self.axes = kind, tuple(axes)
        self.out_shape, self.out_dtype = tuple(out_shape), numpy.dtype(out_name)
        # direction -> the engine function's arguments between the input and the output:
        # the axes (c2r: and the last length), the forward flag (a conjugate flips the sign
        # of the exponent, which is how SciPy computes hfft and ihfft), the normalization
        self._heads = {}
        for inverse in (False, True):
            modes = ((not inverse) != conjugate, int(2 * scale_exponent(norm, inverse)))
            self._heads[inverse] = ((self.axes, self._last) if kind == "c2r"
                                    else (self.axes,)) + modes
        self._inverse = kind == "c2r"
        self._several = len(axes) > 1
        # long double inputs go through execute, which copies a misaligned one first: SciPy's
        # engine reads complex long doubles at a misaligned address (a field of a packed
        # record) past the interpreter's end, where its public functions copy them
        self._long = compute.itemsize > 8 * (2 if compute.kind == "c" else 1)
        self._function = getattr(engine(), kind)

    def _plain_call(self, inverse):
        """The engine function's arguments between the input and the output, where the
        input needs no conversion, cut, padding, C-ordered or aligned copy; else None."""
        if (self._convert is not None or self._cut is not None or self._pad is not None
                or self._several or self._long):
            return None
        return self._heads[self._inverse if inverse is None else inverse]

    def runner(self, inverse=None, workers=None):
        """``execute(a, inverse, workers=workers)`` as a function of ``a`` alone: the engine's
        own call where the input needs nothing done first."""
        head = self._plain_call(inverse)
        if head is None:
            execute = self.execute
            return lambda a: execute(a, inverse, None, workers)
        function = self._function
        if workers is None:  # (read at each call: scipy.fft.set_workers may change it)
            threads = _workers_reader()
            return lambda a: function(a, *head, None, threads())
        args = (*head, None, _threads(workers))
        return lambda a: function(a, *args)

    def writer(self, inverse=None, workers=None):
        """``execute(a, inverse, out, workers)`` as a function of ``(a, out)`` (``out`` a
        NumPy array checked by the caller), returning ``out``: the engine's own call where
        the input needs nothing done first."""
        head = self._plain_call(inverse)
        if head is None:
            execute = self.execute
            return lambda a, out: execute(a, inverse, out, workers)
        function = self._function
        threads = _workers_reader() if workers is None else (lambda n=_threads(workers): n)

        def write(a, out):
            r = function(a, *head, _direct_target(a, out), threads())
            if r is not out:
                out[...] = r  # (out is not in C order, or overlaps the input)
            return out

        return write

    def execute(self, a, inverse=None, out=None, workers=None):
        """The transform of NumPy array ``a`` (of the prepared shape and dtype).

        Parameters
        ----------
        a : numpy.ndarray
        inverse : bool, optional
            The direction of a c2c (default: forward; r2c forward, c2r inverse).
        out : numpy.ndarray, optional
            Where to write the result: of :attr:`out_shape` and :attr:`out_dtype` (checked by
            the caller), any strides, and it may overlap ``a``.
        workers : int, optional
            Threads (checked; negative ones count back from the CPUs). Default: as
            ``scipy.fft.set_workers`` says, else 1.

        Returns
        -------
        numpy.ndarray
            ``out``, or a new array.
        """
        if self._convert is not None:
            a = a.astype(self._convert)
        if self._cut is not None:
            a = a[self._cut]
        elif self._pad is not None:
            shape, dtype, common = self._pad
            padded = numpy.zeros(shape, dtype)
            padded[common] = a[common]
            a = padded
        if not a.flags.aligned:  # (a copy is aligned; see _long)
            a = a.copy()
        if self._several and not a.flags.c_contiguous:
            # SciPy's newer engine (ducc) rounds transforms of several axes differently for
            # other layouts: computed in C order, every layout of the same values gives the
            # same result, bit for bit, as NumPy's tests ask
            a = numpy.ascontiguousarray(a)
        head = self._heads[self._inverse if inverse is None else inverse]
        target = None if out is None else _direct_target(a, out)
        r = self._function(a, *head, target, _threads(workers))
        if out is None or r is out:
            return r
        out[...] = r  # (out is not in C order, or overlaps the input)
        return out


def _direct_target(a, out):
    """``out`` where the engine can write the result of ``a`` there directly, else None: in C
    order (the engine's layout of new results, so that both round alike, bit for bit), of the
    machine's byte order (the engine writes no other), apart from the input (an engine writes
    in place only over an input of its result's dtype).
    Its callers have checked ``out``. A subclass (a memmap, a masked array, a matrix) as the
    plain ndarray of its memory: the engine refuses some."""
    flags = out.flags
    if not (flags.c_contiguous and out.dtype.isnative):
        return None
    if out.__class__ is not numpy.ndarray:
        out = out.view(numpy.ndarray)
    # two arrays that own their memory are apart, unless one is the other; this saves the
    # general test (a fifth of a microsecond, on every call of a plan into out=)
    if a is not out and flags.owndata and a.flags.owndata:
        return out
    return None if numpy.may_share_memory(a, out) else out


class TorchTransform:
    """A transform of CPU torch tensors of one shape and dtype, by ``torch.fft``.

    The parameters are :class:`HostTransform`'s, but ``dtype``, a NumPy-style name. torch
    promotes integers to single precision and has no half-precision FFT on the CPU: those
    inputs are converted first, to double and single precision, as NumPy computes them.
    The results have the strides ``torch.fft`` gives them.
    """

    def __init__(self, kind, shape, dtype, axes, s=None, norm="backward", conjugate=False):
        import torch

        fft = torch.fft
        out_name = transform_dtypes(kind, dtype, complex32=False)[1]
        if kind == "c2r" or kind == "c2c" and dtype.startswith("complex"):
            in_name = complex_dtype(out_name)
        else:
            in_name = real_dtype(out_name)
        self._convert = None if in_name == dtype else getattr(torch, in_name)
        one = len(axes) == 1
        self._dim = axes[0] if one else tuple(axes)
        self._size = (None if s is None else s[0]) if one else s
        if conjugate:  # torch's hfft and ihfft take the norm of NumPy's, unswapped
            norm = swap_norm(norm)
            functions = {True: fft.hfft if one else fft.hfftn,
                         False: fft.ihfft if one else fft.ihfftn}
        elif kind == "c2c":
            functions = {False: fft.fft if one else fft.fftn,
                         True: fft.ifft if one else fft.ifftn}
        else:
            functions = {False: fft.rfft if one else fft.rfftn,
                         True: fft.irfft if one else fft.irfftn}
        self._functions, self._norm = functions, norm
        # torch's defaults for the rest (n=None, dim=-1, norm=None): the call may leave them
        # out, which its argument parser reads a quarter of a microsecond faster
        self._defaults = (one and self._size is None and self._dim in (-1, len(shape) - 1)
                          and norm in (None, "backward"))
        self._inverse = kind == "c2r"
        # torch gives the inverse transforms of real input as lazily conjugated views of the
        # forward ones; other packages (NumPy among them) cannot read those
        self._resolve = in_name == real_dtype(in_name) and (conjugate or kind == "c2c")
        lengths, last = _lengths(kind, shape, axes, s)
        out_shape = list(shape)
        for axis, n in zip(axes, lengths):
            out_shape[axis] = n
        if kind == "r2c":
            out_shape[axes[-1]] = lengths[-1] // 2 + 1
        elif kind == "c2r":
            out_shape[axes[-1]] = last
        self.kind, self.axes = kind, tuple(axes)
        self.out_shape, self.out_dtype = tuple(out_shape), out_name
        # an input of no elements (its zeros padded, where s is given) transforms to zeros,
        # which torch's CPU FFTs fail to make for some shapes (an MKL error)
        self._zeros = math.prod(shape) == 0 and getattr(torch, out_name)

    def execute(self, t, inverse=None, out=None, workers=None):
        """The transform of CPU tensor ``t``, into ``out`` (checked by the caller; it may
        overlap ``t``) or a new tensor. ``workers`` is not used: torch runs on its own
        threads (``torch.set_num_threads``)."""
        if self._zeros:
            return (t.new_zeros(self.out_shape, dtype=self._zeros) if out is None
                    else out.zero_())
        if self._convert is not None:
            t = t.to(self._convert)
        function = self._functions[self._inverse if inverse is None else inverse]
        if out is not None:
            return function(t, self._size, self._dim, self._norm, out=out)
        result = function(t, self._size, self._dim, self._norm)
        return result.resolve_conj() if self._resolve else result

    def runner(self, inverse=None, workers=None):
        """``execute(t, inverse, workers=workers)`` as a function of ``t`` alone: torch's
        own function where nothing else is to do (the call memo's path)."""
        function = self._functions[self._inverse if inverse is None else inverse]
        if self._convert is None and not self._resolve and not self._zeros:
            if self._defaults:
                return function
            size, dim, norm = self._size, self._dim, self._norm
            return lambda t: function(t, size, dim, norm)
        return lambda t: self.execute(t, inverse)


class TorchViaHost:
    """A transform of CPU torch tensors by the host engine, on NumPy views of their memory (no
    copy): results are tensors over the engine's new arrays. Views NumPy cannot see (lazily
    conjugated or negated ones, and tensors that record gradients outside ``torch.no_grad``)
    go to ``torch.fft``.

    Parameters
    ----------
    host : HostTransform
        The transform, prepared for the tensors' shape and dtype (float32, float64,
        complex64 or complex128: those NumPy views take).
    by_torch : TorchTransform
        The same transform by ``torch.fft``; its attributes are this one's.
    """

    def __init__(self, host, by_torch):
        import torch

        self._host, self._torch, self._from_numpy = host, by_torch, torch.from_numpy
        self.kind, self.axes = by_torch.kind, by_torch.axes
        self.out_shape, self.out_dtype = by_torch.out_shape, by_torch.out_dtype

    def execute(self, t, inverse=None, out=None, workers=None):
        """The transform of CPU tensor ``t`` into ``out`` (a CPU tensor, checked by the caller;
        it may overlap ``t``) or a new tensor; ``workers`` as :meth:`HostTransform.execute`
        takes them."""
        try:
            a, target = t.numpy(), None if out is None else out.numpy()
        except RuntimeError:  # (a view NumPy cannot see)
            return self._torch.execute(t, inverse, out, workers)
        result = self._host.execute(a, inverse, target, workers)
        return out if out is not None else self._from_numpy(result)

    def runner(self, inverse=None, workers=None):
        """``execute(t, inverse, workers=workers)`` as a function of ``t`` alone."""
        run, from_numpy = self._host.runner(inverse, workers), self._from_numpy
        by_torch = self._torch.runner(inverse, workers)

        def transform(t):
            try:
                a = t.numpy()
            except RuntimeError:  # (a view NumPy cannot see)
                return by_torch(t)
            return from_numpy(run(a))

        return transform


# torch tensors of these dtypes, and of at most this many elements, may run on the host
# engine: both ways are timed (larger transforms run on torch.fft, whose threads pay off)
_VIEWED = ("float32", "float64", "complex64", "complex128")
_TIMED_MOST = 1 << 14
# transform -> whether the host engine measured faster, for the process (at most _KEPT)
_chosen = {}
_KEPT = 1024


def host_transform(kind, shape, dtype, axes, s=None, norm="backward", conjugate=False,
                   package="numpy"):
    """A prepared host transform: for ``package`` "torch", a :class:`TorchTransform` or, where
    it measured faster for this transform (timed once a process, with SciPy's default
    workers), a :class:`TorchViaHost` (whose engine alone takes ``workers``); else a
    :class:`HostTransform` (NumPy arrays). See :class:`HostTransform` for the parameters."""
    if package != "torch":
        return HostTransform(kind, shape, dtype, axes, s, norm, conjugate)
    by_torch = TorchTransform(kind, shape, dtype, axes, s, norm, conjugate)
    if dtype not in _VIEWED or math.prod(shape) > _TIMED_MOST:
        return by_torch
    key = (kind, tuple(shape), dtype, tuple(axes), None if s is None else tuple(s), norm,
           conjugate)
    host = _chosen.get(key)
    if host is False:
        return by_torch
    by_host = TorchViaHost(HostTransform(kind, shape, dtype, axes, s, norm, conjugate), by_torch)
    if host is None:
        host = _fastest((by_torch, by_host), shape, dtype) is by_host
        if len(_chosen) >= _KEPT:
            _chosen.clear()
        _chosen[key] = host
    return by_host if host else by_torch


def _fastest(candidates, shape, dtype, rounds=5):
    """The fastest of ``candidates`` (transforms of CPU tensors of ``shape`` and ``dtype``) on
    zeros: each called once to warm up, then once a round in turn, its fastest call counting
    (a few microseconds each, for the transforms timed)."""
    import torch

    t = torch.zeros(shape, dtype=getattr(torch, dtype))
    runs = [candidate.runner() for candidate in candidates]
    for run in runs:
        run(t)
    best = [math.inf] * len(runs)
    for _ in range(rounds):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run(t)
            best[i] = min(best[i], time.perf_counter() - start)
    chosen = best.index(min(best))
    _log.debug("CPU FFT of torch tensors %s %s: %s (%s us)", shape, dtype,
               type(candidates[chosen]).__name__,
               ", ".join(f"{type(c).__name__} {b * 1e6:.1f}" for c, b in zip(candidates, best)))
    return candidates[chosen]
