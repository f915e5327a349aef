"""The CUDA back end's source: an :class:`~accelmath.fusion._graph.Expression` written as one
element-wise kernel, ``accelmath_fused``.

The kernel is a grid-stride loop over the result's elements. Its parameters are the array
inputs' addresses (in the inputs' order), the result's address, the scalar inputs (a Python
``float`` as a ``double``, an ``int`` as a ``long long``, a ``complex`` as two doubles, a
NumPy scalar as its own type), the element count and, for a :class:`Layout` that needs it, a
``Dims`` struct of the result's extents, each array's element strides and each axis's
frequency period. Every node is one ``const`` local in the canonical order; float16 values
are computed in float and rounded to half precision after each operation, as NumPy does.

The source depends only on the expression's key and the layout, never on sizes, so one
compile (kept in the store) serves every shape.
"""

import ctypes
import functools
import struct
from typing import NamedTuple

import numpy

from accelmath.errors import InvalidArgumentError
from accelmath.fusion._graph import dtype_name, stand_in

__all__ = ["ELEMENT", "KERNEL", "LOAD", "MAX_DIMS", "Layout", "dims_struct", "element_source",
           "element_struct", "scalar_argument", "scalar_code", "source"]

KERNEL = "accelmath_fused"
ELEMENT = "accelmath_element"
LOAD = "accelmath_load"  # (an element function's further values, read ahead: element_source)
MAX_DIMS = 8

_C_TYPES = {"bool": "bool", "int32": "int", "int64": "long long", "float16": "float",
            "float32": "float", "float64": "double", "complex64": "c64", "complex128": "c128"}
# how an array of each dtype is stored (float16 as its bits)
_STORED = dict(_C_TYPES, float16="unsigned short")
_REAL_OF = {"c64": "float", "c128": "double"}

_PRELUDE = r"""
#ifndef ACCELMATH_FUSED_PRELUDE
#define ACCELMATH_FUSED_PRELUDE
#define AM __device__ __forceinline__
template <typename R> struct cpx { R x, y; };
typedef cpx<float> c64;
typedef cpx<double> c128;
template <typename R> AM cpx<R> mk(R a, R b) { cpx<R> z; z.x = a; z.y = b; return z; }
#ifdef __CUDACC_RTC__
AM float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
AM unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#else  /* the same source compiled for the host (the tests run it there): _Float16 */
AM float h2f(unsigned short h) { _Float16 v; __builtin_memcpy(&v, &h, 2); return (float)v; }
AM unsigned short f2h(float f) { _Float16 v = (_Float16)f; unsigned short h; __builtin_memcpy(&h, &v, 2); return h; }
#endif
AM float rh(float f) { return h2f(f2h(f)); }
AM float am_exp(float a) { return expf(a); }      AM double am_exp(double a) { return exp(a); }
AM float am_log(float a) { return logf(a); }      AM double am_log(double a) { return log(a); }
AM float am_sqrt(float a) { return sqrtf(a); }    AM double am_sqrt(double a) { return sqrt(a); }
AM float am_sin(float a) { return sinf(a); }      AM double am_sin(double a) { return sin(a); }
AM float am_cos(float a) { return cosf(a); }      AM double am_cos(double a) { return cos(a); }
AM float am_tanh(float a) { return tanhf(a); }    AM double am_tanh(double a) { return tanh(a); }
AM float am_pow(float a, float b) { return powf(a, b); }
AM double am_pow(double a, double b) { return pow(a, b); }
AM float am_abs(float a) { return fabsf(a); }     AM double am_abs(double a) { return fabs(a); }
AM int am_abs(int a) { return a < 0 ? -a : a; }
AM long long am_abs(long long a) { return a < 0 ? -a : a; }
AM bool am_abs(bool a) { return a; }
AM float am_hypot(float a, float b) { return hypotf(a, b); }
AM double am_hypot(double a, double b) { return hypot(a, b); }
AM float am_atan2(float a, float b) { return atan2f(a, b); }
AM double am_atan2(double a, double b) { return atan2(a, b); }
/* NumPy's maximum and minimum: a NaN on either side is the result */
template <typename T> AM T am_max(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename T> AM T am_min(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <typename R> AM cpx<R> cadd(cpx<R> a, cpx<R> b) { return mk(a.x + b.x, a.y + b.y); }
template <typename R> AM cpx<R> csub(cpx<R> a, cpx<R> b) { return mk(a.x - b.x, a.y - b.y); }
template <typename R> AM cpx<R> cmul(cpx<R> a, cpx<R> b) {
  return mk(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
/* Smith's division, as NumPy's */
template <typename R> AM cpx<R> cdiv(cpx<R> a, cpx<R> b) {
  R ar = am_abs(b.x), ai = am_abs(b.y);
  if (ar >= ai) {
    if (ar == 0 && ai == 0) return mk(a.x / ar, a.y / ai);
    R r = b.y / b.x, d = b.x + b.y * r;
    return mk((a.x + a.y * r) / d, (a.y - a.x * r) / d);
  }
  R r = b.x / b.y, d = b.x * r + b.y;
  return mk((a.x * r + a.y) / d, (a.y * r - a.x) / d); }
template <typename R> AM cpx<R> cneg(cpx<R> a) { return mk(-a.x, -a.y); }
template <typename R> AM cpx<R> cconj(cpx<R> a) { return mk(a.x, -a.y); }
template <typename R> AM R cabs_(cpx<R> a) { return am_hypot(a.x, a.y); }
template <typename R> AM cpx<R> cexp(cpx<R> a) {
  R e = am_exp(a.x); return mk(e * am_cos(a.y), e * am_sin(a.y)); }
template <typename R> AM cpx<R> clog(cpx<R> a) { return mk(am_log(cabs_(a)), am_atan2(a.y, a.x)); }
template <typename R> AM cpx<R> csqrt(cpx<R> a) {
  R m = cabs_(a);
  if (m == 0) return mk((R)0, a.y);
  R t = am_sqrt((m + am_abs(a.x)) / 2);
  if (a.x >= 0) return mk(t, a.y / (2 * t));
  return mk(am_abs(a.y) / (2 * t), a.y >= 0 ? t : -t); }
template <typename R> AM cpx<R> csin(cpx<R> a) {
  return mk(am_sin(a.x) * cosh(a.y), am_cos(a.x) * sinh(a.y)); }
template <typename R> AM cpx<R> ccos(cpx<R> a) {
  return mk(am_cos(a.x) * cosh(a.y), -am_sin(a.x) * sinh(a.y)); }
/* Kahan's form: no overflow for a large real part, where tanh is +-1 */
template <typename R> AM cpx<R> ctanh(cpx<R> a) {
  R limit = sizeof(R) == 4 ? (R)9 : (R)22;
  if (am_abs(a.x) > limit) {
    R e = am_exp(-2 * am_abs(a.x));
    return mk(a.x > 0 ? (R)1 : (R)-1, 4 * am_sin(a.y) * am_cos(a.y) * e); }
  R t = am_sin(a.y) / am_cos(a.y), beta = 1 + t * t, sh = (R)sinh(a.x);
  R rho = am_sqrt(1 + sh * sh), denominator = 1 + beta * sh * sh;
  return mk(beta * rho * sh / denominator, t / denominator); }
template <typename R> AM cpx<R> cpow(cpx<R> a, cpx<R> b) {
  if (a.x == 0 && a.y == 0) return (b.x == 0 && b.y == 0) ? mk((R)1, (R)0) : mk((R)0, (R)0);
  return cexp(cmul(b, clog(a))); }
template <typename R> AM bool ceq(cpx<R> a, cpx<R> b) { return a.x == b.x && a.y == b.y; }
#endif
"""


class Layout(NamedTuple):
    """How a kernel finds its elements: ``flat`` (every array is dense in the result's order,
    or one element: those at the positions ``single`` among the arrays, read at offset 0), or
    strided through ``Dims``; ``ndim`` the result's dimensions where the kernel needs
    coordinates (strided, or an expression with index or frequency), else 0; ``narrow``
    where the result has fewer than 2^32 elements, its coordinates found by 32-bit division
    (several times faster than 64-bit division, which a memory-bound pass would feel)."""

    flat: bool
    ndim: int
    single: tuple = ()
    narrow: bool = False


def _literal(value, dtype):
    """An exact C literal of a constant."""
    name = dtype_name(dtype)
    if name == "bool":
        return "true" if value else "false"
    if name in ("int32", "int64"):  # (the bits, unsigned: -2**63 has no signed literal)
        return f"(({_C_TYPES[name]})0x{int(value) & 0xFFFFFFFFFFFFFFFF:x}ULL)"
    if dtype.kind == "c":
        real = "float32" if name == "complex64" else "float64"
        z = complex(value)
        return f"mk({_literal(z.real, numpy.dtype(real))}, {_literal(z.imag, numpy.dtype(real))})"
    if name == "float64":
        bits = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
        return f"__longlong_as_double((long long)0x{bits:x}ULL)"
    bits = struct.unpack("<i", struct.pack("<f", numpy.float32(value)))[0]
    text = f"__int_as_float({bits})"
    return f"rh({text})" if name == "float16" else text


def _convert(expr, source, target):
    """C that converts ``expr`` (a local) of dtype ``source`` to dtype ``target``."""
    if source == target:
        return expr
    c = _C_TYPES[dtype_name(target)]
    if target.kind == "c":
        real = _REAL_OF[c]
        if source.kind == "c":
            return f"mk(({real}){expr}.x, ({real}){expr}.y)"
        return f"mk(({real}){expr}, ({real})0)"
    if target.kind == "b":
        return f"({expr}.x != 0 || {expr}.y != 0)" if source.kind == "c" else f"({expr} != 0)"
    cast = f"(({c}){expr})"
    return f"rh({cast})" if dtype_name(target) == "float16" else cast


def _common(nodes):
    """The dtype NumPy compares or orders ``nodes`` in."""
    return numpy.result_type(*(stand_in(n.dtype, n.weak) for n in nodes))


_REAL_FUNCTIONS = {"exp": "am_exp", "log": "am_log", "sqrt": "am_sqrt", "sin": "am_sin",
                   "cos": "am_cos", "tanh": "am_tanh"}
_COMPLEX_FUNCTIONS = {"exp": "cexp", "log": "clog", "sqrt": "csqrt", "sin": "csin",
                      "cos": "ccos", "tanh": "ctanh"}
_ARITHMETIC = {"add": ("+", "cadd"), "subtract": ("-", "csub"), "multiply": ("*", "cmul"),
               "divide": ("/", "cdiv")}
_ORDER = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}


def _operation(node, args, nodes):
    """The C expression of one operation node (its arguments are locals ``args``)."""
    op, dtype = node.op, node.dtype
    complex_ = dtype.kind == "c"
    # arguments converted to the node's dtype (the arithmetic ones) or to a common one
    same = [_convert(a, nodes[i].dtype, dtype) for a, i in zip(args, node.args)]
    if op in _ARITHMETIC:
        symbol, function = _ARITHMETIC[op]
        return f"{function}({same[0]}, {same[1]})" if complex_ else f"({same[0]} {symbol} {same[1]})"
    if op == "negative":
        return f"cneg({same[0]})" if complex_ else f"(-{same[0]})"
    if op in _REAL_FUNCTIONS:
        return (_COMPLEX_FUNCTIONS if complex_ else _REAL_FUNCTIONS)[op] + f"({same[0]})"
    if op == "power":
        return _power(node, same, nodes)
    if op == "absolute":
        source = nodes[node.args[0]]
        if source.dtype.kind == "c":
            return f"cabs_({args[0]})"
        return f"am_abs({same[0]})"
    if op == "conjugate":
        return f"cconj({same[0]})" if complex_ else same[0]
    if op in ("real", "imag"):
        source = nodes[node.args[0]]
        if source.dtype.kind == "c":
            return f"{args[0]}.{'x' if op == 'real' else 'y'}"
        return same[0] if op == "real" else _literal(0, dtype)
    if op in ("maximum", "minimum"):
        return f"am_{op[:3]}({same[0]}, {same[1]})"
    if op in _ORDER or op in ("equal", "not_equal"):
        common = _common([nodes[i] for i in node.args])
        a, b = (_convert(x, nodes[i].dtype, common) for x, i in zip(args, node.args))
        if common.kind == "c":
            return f"{'!' if op == 'not_equal' else ''}ceq({a}, {b})"
        symbol = _ORDER.get(op) or ("==" if op == "equal" else "!=")
        return f"({a} {symbol} {b})"
    if op == "logical_and":
        return f"({args[0]} && {args[1]})"
    if op == "logical_or":
        return f"({args[0]} || {args[1]})"
    if op == "logical_not":
        return f"(!{args[0]})"
    if op == "where":
        a, b = (_convert(x, nodes[i].dtype, dtype) for x, i in zip(args[1:], node.args[1:]))
        return f"({args[0]} ? {a} : {b})"
    if op == "astype":
        return same[0]
    x, zero, one = same[0], _literal(0, dtype), _literal(1, dtype)
    if op == "relu":
        return f"am_max({x}, {zero})"
    if op == "sigmoid":
        return f"({one} / ({one} + am_exp(-{x})))"
    if op == "gelu":
        c, k, half = (_literal(v, dtype) for v in (0.7978845608028654, 0.044715, 0.5))
        return f"({half} * {x} * ({one} + am_tanh({c} * ({x} + {k} * {x} * {x} * {x}))))"
    raise AssertionError(f"no CUDA for {op}")


def _power(node, same, nodes):
    """``a ** b``: NumPy's exact forms for the exponents 2, 1, 0.5 and -1 when ``b`` is a
    constant, else pow."""
    base, exponent = same
    constant = nodes[node.args[1]]
    one = _literal(1, node.dtype)
    if constant.op == "constant" and node.dtype.kind != "c":
        value = constant.attr
        if value == 2:
            return f"({base} * {base})"
        if value == 1:
            return base
        if value == 0.5:
            return f"am_sqrt({base})"
        if value == -1:
            return f"({one} / {base})"
    if node.dtype.kind == "c":
        return f"cpow({base}, {exponent})"
    return f"am_pow({base}, {exponent})"


def _scalar_parameter(spec):
    if spec.weak:
        return {"b": "bool", "i": "long long", "f": "double", "c": "c128"}[spec.dtype.kind]
    return _C_TYPES[dtype_name(spec.dtype)]


def _statements(expression, ndim, load, scalar, dims, lines):
    """Append to ``lines`` one ``const`` local per node of ``expression`` (coordinates in
    ``c``, ``ndim`` of them; ``load(k)``: the C expression that reads array input ``k``'s
    element; scalar input ``k`` is ``{scalar}{k}``; ``dims``: the prefix of the ``Dims``
    struct's fields). The locals' names, in the nodes' order."""
    names = []
    for index, node in enumerate(expression.nodes):
        name, c_type = f"v{index}", _C_TYPES[dtype_name(node.dtype)]
        if node.op == "input":
            spec = expression.inputs[node.attr]
            if spec.array:
                value = load(node.attr)
                if dtype_name(node.dtype) == "float16":
                    value = f"h2f({value})"
            else:  # (its parameter's C type is the node's)
                value = f"{scalar}{node.attr}"
        elif node.op == "constant":
            value = _literal(node.attr, node.dtype)
        elif node.op == "index":
            value = f"c[{node.attr % ndim}]"
        elif node.op == "frequency":
            a = node.attr % ndim
            value = (f"({c_type})(({dims}half[{a}] || c[{a}] <= ({dims}period[{a}] - 1) / 2 ? "
                     f"(double)c[{a}] : (double)(c[{a}] - {dims}period[{a}])) / "
                     f"{dims}period[{a}])")
        else:
            value = _operation(node, [names[a] for a in node.args], expression.nodes)
            if dtype_name(node.dtype) == "float16" and node.op not in ("astype", "real", "imag"):
                value = f"rh({value})"
        lines.append(f"    const {c_type} {name} = {value};")
        names.append(name)
    return names


def _dims_declaration(ndim, arrays):
    """The C declaration of the ``Dims`` struct that :func:`dims_struct` mirrors."""
    return (f"struct Dims {{ long long shape[{ndim}]; long long strides[{arrays}][{ndim}]; "
            f"long long period[{ndim}]; int half[{ndim}]; }};")


def source(expression, layout, out_dtype=None):
    """The CUDA C++ source of ``expression`` as kernel :data:`KERNEL` for ``layout``, storing
    the result as ``out_dtype`` (default the expression's dtype; a narrower one, such as a
    transform's, is converted to as NumPy's ``astype`` does)."""
    out_dtype = numpy.dtype(out_dtype or expression.dtype)
    arrays = [k for k, spec in enumerate(expression.inputs) if spec.array]
    position = {k: j for j, k in enumerate(arrays)}
    ndim = layout.ndim
    if ndim > MAX_DIMS:
        raise InvalidArgumentError(f"a fused kernel takes at most {MAX_DIMS} dimensions, got "
                                   f"{ndim}")
    parameters = [f"const {_STORED[dtype_name(expression.inputs[k].dtype)]} *in{j}"
                  for j, k in enumerate(arrays)]
    parameters.append(f"{_STORED[dtype_name(out_dtype)]} *out")
    parameters += [f"{_scalar_parameter(spec)} s{k}" for k, spec in enumerate(expression.inputs)
                   if not spec.array]
    parameters.append("long long n")
    lines = []
    if ndim:
        lines.append(_dims_declaration(ndim, len(arrays) + 1))
        parameters.append("Dims d")
    lines.append(f'extern "C" __global__ void {KERNEL}({", ".join(parameters)}) {{')
    lines.append("  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; "
                 "i += (long long)gridDim.x * blockDim.x) {")
    if ndim:
        if layout.narrow:
            lines.append(f"    long long c[{ndim}]; unsigned int r = (unsigned int)i;")
            lines.append(f"    for (int a = {ndim} - 1; a >= 0; --a) {{ const unsigned int e = "
                         "(unsigned int)d.shape[a]; c[a] = r % e; r /= e; }")
        else:
            lines.append(f"    long long c[{ndim}]; long long r = i;")
            lines.append(f"    for (int a = {ndim} - 1; a >= 0; --a) {{ c[a] = r % d.shape[a]; "
                         "r /= d.shape[a]; }")
    offsets = {}
    for j in range(len(arrays) + 1):
        if layout.flat:
            offsets[j] = "0" if j in layout.single else "i"
        else:
            terms = " + ".join(f"c[{a}] * d.strides[{j}][{a}]" for a in range(ndim))
            lines.append(f"    const long long o{j} = {terms or '0'};")
            offsets[j] = f"o{j}"

    def load(k):
        return f"in{position[k]}[{offsets[position[k]]}]"

    names = _statements(expression, ndim, load, "s", "d.", lines)
    result = _convert(names[-1], expression.dtype, out_dtype)
    if dtype_name(out_dtype) == "float16":
        result = f"f2h({result})"
    lines.append(f"    out[{offsets[len(arrays)]}] = {result};")
    lines.append("  }")
    lines.append("}")
    return _PRELUDE + "\n".join(lines) + "\n"


def element_source(expression, ndim, axis=None, result=None, flat=False, narrow=False,
                   internal=False):
    """The CUDA C++ of ``expression`` as a device function of one element, for code that
    reaches its elements itself (a transform's fused pass, a cuFFT callback), and the struct
    ``Element`` (:func:`element_struct`) of the further arrays' addresses, the scalars and a
    ``Dims`` of the element array's ``ndim`` extents, the arrays' element strides and the
    axes' frequency periods. The element is the expression's first input (an array); the
    function returns ``result`` (default: the expression's dtype), converted as ``astype``.

    With an ``axis`` (0 or 1), two functions of the element's coordinates ``row`` along
    ``axis``, ``col`` the flat index over the axes after it and ``b`` along the one axis before
    it (where there is one): ``Loaded accelmath_load(long long b, long long row, long long col,
    const Element &e)`` reads the further arrays' values there, and ``R accelmath_element(E
    element, const Loaded &l, long long b, long long row, long long col, const Element &e)``
    computes from them (a kernel reads a batch of values before it needs them, each read's
    latency hidden by the others and by the work between). Without: ``R accelmath_element(E
    element, long long i, const Element &e)``, ``i`` the element's flat index in C order. There,
    ``flat`` says that every further array is dense over the trailing axes it spans (broadcast
    along the others): array ``j``'s offset is ``i`` modulo ``e.d.strides[j][0]``, which holds
    its element count, and the coordinates are found only where ``index`` or ``frequency`` ask;
    ``narrow`` that ``i`` (or ``col``) is below 2^32 (32-bit division, several times faster).
    ``internal`` puts the function and its structs in an unnamed namespace, so that two such
    sources linked together (a plan's load and store callbacks) keep their own."""
    if ndim > MAX_DIMS or (axis is not None and axis > 1):
        raise InvalidArgumentError(f"a fused pass takes at most {MAX_DIMS} dimensions and one "
                                   "axis before its own")
    arrays = [k for k, spec in enumerate(expression.inputs) if spec.array]
    if not arrays or arrays[0] != 0:
        raise InvalidArgumentError("a fused pass's expression takes its element first")
    element = expression.inputs[0].dtype
    result = numpy.dtype(result or expression.dtype)
    position = {k: j for j, k in enumerate(arrays)}
    fields = [f"const {_STORED[dtype_name(expression.inputs[k].dtype)]} *in{j};"
              for j, k in enumerate(arrays) if j]
    fields += [f"{_scalar_parameter(spec)} s{k};" for k, spec in enumerate(expression.inputs)
               if not spec.array]
    lines = ["namespace {"] if internal else []
    lines += [_dims_declaration(ndim, len(arrays)),
              f"struct Element {{ {' '.join(fields)} Dims d; }};"]
    index = "unsigned int" if narrow else "long long"
    head = f"AM {_C_TYPES[dtype_name(result)]} {ELEMENT}({_C_TYPES[dtype_name(element)]} element, "
    offsets = []
    for j in range(1, len(arrays)):
        terms = " + ".join(f"c[{a}] * e.d.strides[{j}][{a}]" for a in range(ndim))
        if flat and axis is None:
            terms = f"(long long)(i % ({index})e.d.strides[{j}][0])"
        offsets.append(f"    const long long o{j} = {terms or '0'};")
    if axis is None:
        lines += [head + "long long flat_index, const Element &e) {",
                  f"    {index} i = ({index})flat_index;",
                  f"    long long c[{max(ndim, 1)}];"]
        if not flat or expression.axes():
            lines += [f"    {{ {index} r = i;",
                      f"      for (int a = {ndim} - 1; a >= 0; --a) {{ c[a] = r % ({index})"
                      f"e.d.shape[a]; r /= ({index})e.d.shape[a]; }} }}"]
        lines += offsets

        def load(k):
            j = position[k]
            return f"e.in{j}[o{j}]" if j else "element"
    else:
        # (the flat index over the axes after ``axis`` is below the first one's extent once
        # the others are divided out: no division for one such axis)
        coordinates = [f"    long long c[{ndim}];",
                       f"    c[{axis}] = row;",
                       f"    {{ {index} r = ({index})col;",
                       f"      for (int a = {ndim} - 1; a > {axis} + 1; --a) {{ c[a] = r % "
                       f"({index})e.d.shape[a]; r /= ({index})e.d.shape[a]; }}",
                       f"      c[{axis} + 1] = r; }}" if axis + 1 < ndim else "    }"]
        if axis:
            coordinates.append("    c[0] = b;")
        values = [f"{_STORED[dtype_name(expression.inputs[k].dtype)]} a{j};"
                  for j, k in enumerate(arrays) if j]
        parameters = "long long b, long long row, long long col, const Element &e"
        lines += [f"struct Loaded {{ {' '.join(values) or 'char none;'} }};",
                  f"AM Loaded {LOAD}({parameters}) {{", *coordinates, *offsets,
                  "    Loaded l;", *(f"    l.a{j} = e.in{j}[o{j}];"
                                     for j in range(1, len(arrays))),
                  "    return l;", "}",
                  head + f"const Loaded &l, {parameters}) {{", *coordinates]

        def load(k):
            j = position[k]
            return f"l.a{j}" if j else "element"

    names = _statements(expression, ndim, load, "e.s", "e.d.", lines)
    lines.append(f"    return {_convert(names[-1], expression.dtype, result)};")
    lines.append("}")
    if internal:
        lines.append("}")
    return _PRELUDE + "\n".join(lines) + "\n"


_SCALAR_CTYPES = {"bool": ctypes.c_bool, "long long": ctypes.c_longlong, "int": ctypes.c_int,
                  "double": ctypes.c_double, "float": ctypes.c_float}


def element_struct(expression, ndim):
    """The ctypes struct ``Element`` of :func:`element_source`'s function for
    ``expression`` on ``ndim`` dimensions: fields ``in1``... (addresses), ``s<k>`` (scalar
    input ``k``, as :func:`scalar_argument`) and ``d`` (:func:`dims_struct`)."""
    arrays = [k for k, spec in enumerate(expression.inputs) if spec.array]
    fields = [(f"in{j}", ctypes.c_void_p) for j in range(1, len(arrays))]
    for k, spec in enumerate(expression.inputs):
        if not spec.array:
            kind = _scalar_parameter(spec)
            fields.append((f"s{k}", {"c128": _Complex128, "c64": _Complex64}.get(kind)
                           or _SCALAR_CTYPES[kind]))
    fields.append(("d", dims_struct(ndim, len(arrays))))
    return type("Element", (ctypes.Structure,), {"_fields_": fields})


@functools.lru_cache(maxsize=None)
def dims_struct(ndim, arrays):
    """The ctypes struct ``Dims`` of a kernel with ``ndim`` coordinates and ``arrays``
    arrays, the result included."""
    return type(f"Dims{ndim}x{arrays}", (ctypes.Structure,), {"_fields_": [
        ("shape", ctypes.c_longlong * ndim),
        ("strides", (ctypes.c_longlong * ndim) * arrays),
        ("period", ctypes.c_longlong * ndim),
        ("half", ctypes.c_int * ndim)]})


class _Complex128(ctypes.Structure):
    _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double)]


class _Complex64(ctypes.Structure):
    _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float)]


def scalar_code(spec):
    """How :func:`accelmath._core.hostcall.chain` writes a scalar input of ``spec`` that a
    front keyed (a Python int, float or complex): ``"q"``, ``"d"`` or ``"D"``; None for any
    other (a bool, a NumPy scalar)."""
    return {"long long": "q", "double": "d", "c128": "D"}.get(_scalar_parameter(spec)) \
        if spec.weak else None


def scalar_argument(value, spec):
    """The ctypes value a scalar input ``value`` is passed as (see :func:`source`)."""
    kind = _scalar_parameter(spec)
    if kind == "long long" and not -2 ** 63 <= value < 2 ** 63:  # (ctypes would wrap it)
        raise InvalidArgumentError(f"the scalar argument {value} does not fit a 64-bit "
                                   "integer, which a fused expression takes a Python int as")
    if kind == "c128":
        z = complex(value)
        return _Complex128(z.real, z.imag)
    if kind == "c64":
        z = complex(value)
        return _Complex64(z.real, z.imag)
    return _SCALAR_CTYPES[kind](value)
