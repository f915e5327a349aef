"""The named records an FFT call is described, remembered and cached by.

A public function describes the call it was given as a :class:`Transform` and hands it to
:func:`accelmath.fft._transform.transform`, which checks it (:class:`Checked`), remembers it
in the call memo under a :class:`CallKey` and caches the device plan it made under a
:class:`PlanKey`. A fusion layer or torch's autograd reads a call from these records and
replays it (an adjoint c2c transform is the record with ``inverse`` flipped and the norm
swapped).

The records are NamedTuples: hashable, compared field by field, and built on the per-call
paths with :func:`record` (the fields as one tuple), which skips the NamedTuple's
Python-level ``__new__``.

Examples
--------
>>> from accelmath.fft._records import CallKey, Transform, record
>>> call = record(Transform, ("c2c", None, (-1,), None, False, False, "auto", None))
>>> call == Transform("c2c", None, (-1,), None, False, False, "auto", None)
True
>>> call.axes, call._replace(inverse=True).inverse
((-1,), True)
>>> key = CallKey(call, False, list, ((4,), "complex64"))
>>> {key: 1}[CallKey(call, False, list, ((4,), "complex64"))]
1
"""

from typing import Hashable, NamedTuple, Optional

from accelmath._core.operand import Operand

__all__ = ["Transform", "CallKey", "Checked", "PlanKey", "record"]

#: ``record(Transform, (kind, s, ...))``: a record made from a tuple of all its fields in
#: order, as ``Transform(kind, s, ...)`` makes it but without its Python-level ``__new__``
#: (about 0.1 us less, which the per-call paths keep). It does not count the fields.
record = tuple.__new__


class Transform(NamedTuple):
    """One transform call, as the caller asked for it (the public functions make it), or as
    checked (:class:`Checked`: the same transform with its arguments normalized).

    hfft and ihfft are irfft and rfft of the conjugate with the norm direction swapped, as in
    NumPy: their records say so (``conjugate=True``, ``norm`` swapped).
    """

    #: "c2c", "r2c" or "c2r".
    kind: str
    #: The transform lengths, one per axis (``(n,)`` for the one-axis functions, ``n``
    #: checked), or None: the input's. As given; checked: ints, -1 resolved, or None.
    s: Optional[tuple]
    #: The axes (``(axis,)`` for the one-axis functions), or None: the function's default.
    #: As given; checked: non-negative, in the order given (an axis may repeat).
    axes: Optional[tuple]
    #: The normalization: None, "backward", "ortho" or "forward" (hfft and ihfft: the
    #: caller's, swapped). As given; checked: a name, None resolved to "backward".
    norm: object
    #: Whether the transform runs the inverse direction (c2r: always; r2c: never).
    inverse: bool
    #: Whether the input's conjugate is transformed (and, for c2c parts, the result
    #: conjugated): hfft and ihfft.
    conjugate: bool
    #: "auto", "cuda" or "cpu" (as given; checked before the call runs).
    execution: str
    #: CPU threads for host arrays: None, or the caller's count checked
    #: (:func:`~accelmath._core.arguments.check_workers`: a key must not hold 2.0 for 2).
    workers: Optional[int]


class CallKey(NamedTuple):
    """What the call memo (:class:`~accelmath._core.dispatch.Dispatcher`) remembers a call
    under: an identical call later runs what this one led to, without its checks."""

    #: The call as asked (its ``workers`` checked).
    transform: Transform
    #: Whether ``out=`` was given (a call with ``out=`` checks it each time).
    out_given: bool
    #: The input's type.
    array_type: type
    #: The input's layout key (:func:`~accelmath._core.call_key.layout_reader`): shape and
    #: dtype of host arrays, and strides and device of device arrays.
    layout: Hashable


class Checked(NamedTuple):
    """A call whose arguments are checked: what its execution on the host or the device
    reads (not a key: it holds the operand)."""

    #: The call, its ``s``, ``axes`` and ``norm`` normalized (see :class:`Transform`).
    transform: Transform
    #: The input as the core reads it.
    operand: Operand
    #: The dtypes the transform reads and writes
    #: (:func:`~accelmath.fft._normalize.transform_dtypes` of the input's: a c2c of real
    #: input reads it as complex, float16 computes in single where the package has no
    #: complex32).
    in_dtype: str
    out_dtype: str
    #: For a c2r transform, the output's length on the last transformed axis; else None.
    last: Optional[int]


class PlanKey(NamedTuple):
    """What the device plan cache of the stateless functions keeps an
    :class:`~accelmath.fft.FFT` plan under: the layout and options it was made for."""

    #: "c2c", "r2c" or "c2r".
    kind: str
    #: The transformed axes, checked (non-negative, distinct).
    axes: tuple
    #: The operand's shape, strides (in elements) and dtype as the plan reads it: after its
    #: conversion to ``in_dtype`` and its cut or zero-padding to ``s``.
    shape: tuple
    strides: tuple
    dtype: str
    #: The checked norm ("backward", "ortho" or "forward").
    norm: str
    #: Whether the plan transforms the conjugate (hfft, ihfft).
    conjugate: bool
    #: For a c2r plan, the output's length on the last axis; else None.
    last: Optional[int]
    #: The strides of a dense ``out=`` the plan writes, or None: the result's own layout.
    out_strides: Optional[tuple]
    #: The operand's package ("cupy", "torch", ...): the result is allocated in it.
    package: str
    #: The type the plan was made from: the caller's array type (a plan that reads later
    #: arrays of it in a few lookups), or :class:`~accelmath._core.operand.Operand`.
    operand_type: type
