"""accelmath's own mixed-radix transforms in shared memory, for the lengths cuFFT is slow on.

cuFFT runs lengths whose prime factors are small at close to the memory's speed, and others
(4088 = 8 x 7 x 73, the image subtraction's) several times slower: a float64 ``rfft2`` of
4088^2 took 0.86 ms on an H200 against 0.25 for 4096^2. These kernels transform a whole
row or column per thread block, in shared memory, with a Stockham schedule of radices (each
stage reads ``a[j + t N/R]``, twiddles, makes an R-point DFT and writes ``b[(j / Ns) Ns R +
j % Ns + t Ns]``, the two buffers trading places after it). Radices 2, 4 and 8 are unrolled
as steps of radix 2, 3, 5 and 7 with their constants; an odd prime up to
:data:`MAX_PRIME` is a stage of its own, each output pair ``m, p - m`` made from the sums and
differences of the input pairs ``t, p - t`` (a quarter of a direct DFT's multiplications), a
thread making them for several DFTs at once.

Three kernels make a 2-D real filter ``irfft2(fn(rfft2(x)))`` in three passes over the data
(:func:`filter_source`): the rows' r2c transforms (for an even width, a complex transform of
half its length, of the even and odd values as real and imaginary parts), one pass down the
columns (forward, the element function, the whole transform's ``1 / n``, inverse) and the rows'
c2r transforms. On an H200 a float64 4088^2 filter took 1.3 ms this way against 1.9 for torch's
``irfft2(rfft2(x) * k)``; the kernels reach a fraction of the GPU's float64 rate (the 73-point
DFTs are most of their time), so the way is offered only for lengths with a prime factor above
7 (:func:`awkward`), and taken where it measures faster. The rows' kernels and a pass of the
columns' transforms in one direction (``columns_forward``, ``columns_inverse``) make a real 2-D
transform in two passes, which an FFT plan of such lengths times against cuFFT's (float64
4088^2 r2c: 0.58 ms against 0.83 on an H200). :func:`reference` runs the same schedule in
NumPy (the CPU tests check the index arithmetic against ``numpy.fft``). Their launches are
:mod:`.kernels`'.
"""

import math

import numpy

__all__ = ["MAX_LENGTH", "MAX_PRIME", "SHARED_CONSTANTS", "THREADS", "awkward", "fits",
           "filter_source", "radices", "reference", "row_length", "shared_bytes", "stages"]

#: The largest prime factor a length may have
MAX_PRIME = 127
#: The longest transform (its values and a scratch in one block's shared memory: 192 KiB of
#: complex128)
MAX_LENGTH = 6144
#: ``(threads per block, outputs m per thread of a prime radix)`` of the row kernels and of the
#: column kernel, by dtype: the fastest measured on an H200 for 4088^2 (rows of a few hundred
#: threads: several blocks share a multiprocessor; in float64, columns of 896, the values and
#: scratch of one column filling its shared memory, and 3 outputs a thread, so that most
#: threads have work in the stage of the prime 73)
THREADS = {"float32": ((256, 4), (256, 4)), "float64": ((384, 4), (896, 3))}
#: Whether a prime stage reads its constants from a copy in shared memory (made by the block)
#: rather than from ``__constant__`` memory, by dtype: the faster on an H200 for 4088^2
SHARED_CONSTANTS = {"float32": False, "float64": True}


_SMALL = (2, 3, 4, 5, 7, 8)  # the radices unrolled with their constants


def radices(n):
    """The radices of the stages of an ``n``-point transform, in order (the large primes
    first: the first stage has no twiddles), or None where a prime factor of ``n`` exceeds
    :data:`MAX_PRIME`.

    Examples
    --------
    >>> from accelmath.fft._kernels.mixed import radices
    >>> radices(4088), radices(4096)[:2], radices(2 * 131)
    ([73, 7, 8], [8, 8], None)
    """
    if n < 1:
        return None
    m, primes, twos = n, [], 0
    while m % 2 == 0:
        m, twos = m // 2, twos + 1
    p = 3
    while p * p <= m:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 2
    if m > 1:
        primes.append(m)
    if any(p > MAX_PRIME for p in primes):
        return None
    large = sorted((p for p in primes if p > 8), reverse=True)
    small = sorted((p for p in primes if p <= 8), reverse=True)
    powers = [8] * (twos // 3) + ([4] if twos % 3 == 2 else [2] if twos % 3 == 1 else [])
    return large + small + powers


def stages(n):
    """``[(R, Ns)]``: each stage's radix and the product of the radices before it."""
    out, ns = [], 1
    for r in radices(n) or ():
        out.append((r, ns))
        ns *= r
    return out


def fits(n0, n1, itemsize, shared=None):
    """Whether the kernels of the filter of an ``n0 x n1`` real array, of a spectrum of
    complex values of ``itemsize`` bytes, run here (``shared``: the bytes of shared memory a
    block may have, where known): a block holds a transform's values and scratch, and the
    constants of its prime stages (each stage its own, in both directions)."""
    lengths = (n0, row_length(n1))
    if min(n0, n1) < 8 or any(n > MAX_LENGTH or radices(n) is None for n in lengths):
        return False
    return shared is None or all(
        shared_bytes(n, itemsize) + 2 * itemsize * sum(_large_primes(n))
        <= shared
        for n in lengths)


def row_length(n1):
    """The length of the complex transforms of the rows' kernels for real rows of ``n1``:
    half of an even ``n1``, else ``n1``."""
    return n1 // 2 if n1 % 2 == 0 else n1


def awkward(n):
    """Whether ``n`` has a prime factor above 7: the lengths cuFFT runs slowly, where these
    kernels are worth timing against it."""
    return bool(_large_primes(n))


def _large_primes(n):
    """The radices of ``n``'s stages that are primes above 7 (each a stage of its own, with
    its constants), in order; none where :func:`radices` has none."""
    return [r for r in radices(n) or () if r not in _SMALL]


def shared_bytes(n, itemsize):
    """The shared memory of a block transforming ``n`` values: the values and a scratch of
    as many (each stage reads one and writes the other)."""
    return 2 * n * itemsize


def reference(x, sign=-1):
    """The transforms of the last axis of ``x`` by this module's schedule, in NumPy:
    ``numpy.fft.fft`` (``sign`` -1) or ``n`` times ``ifft`` (+1)."""
    s = numpy.array(x, dtype=numpy.complex128)
    n = s.shape[-1]
    w = numpy.exp(-2j * numpy.pi * numpy.arange(n) / n)
    if sign > 0:
        w = w.conj()
    for r, ns in stages(n):
        g = n // r
        j = numpy.arange(g)
        k = j % ns
        v = numpy.stack([s[..., j + t * g] for t in range(r)])  # (r, ..., g)
        for t in range(1, r):
            v[t] = v[t] * w[t * k * (n // (ns * r))]
        m = numpy.arange(r)
        dft = numpy.exp(sign * 2j * numpy.pi * numpy.outer(m, m) / r)
        y = numpy.tensordot(dft, v, axes=(1, 0))
        base = (j // ns) * ns * r + k
        out = numpy.empty_like(s)
        for t in range(r):
            out[..., base + t * ns] = y[t]
        s = out
    return s


# --- CUDA source ------------------------------------------------------------------------------

def _literal(value):
    return f"(real){float(value)!r}"


def _mul_i(z, sign):
    """C of ``z`` times ``sign`` i (``z`` a pair of C expressions)."""
    x, y = z
    return (f"-({y})", x) if sign > 0 else (y, f"-({x})")


def _dft4(y, sign):
    """The 4-point DFT of pairs ``y`` as C expressions, by two radix-2 steps."""
    e0 = (f"({y[0][0]} + {y[2][0]})", f"({y[0][1]} + {y[2][1]})")
    e1 = (f"({y[0][0]} - {y[2][0]})", f"({y[0][1]} - {y[2][1]})")
    f0 = (f"({y[1][0]} + {y[3][0]})", f"({y[1][1]} + {y[3][1]})")
    f1 = _mul_i((f"({y[1][0]} - {y[3][0]})", f"({y[1][1]} - {y[3][1]})"), sign)
    return [(f"{e0[0]} + {f0[0]}", f"{e0[1]} + {f0[1]}"),
            (f"{e1[0]} + {f1[0]}", f"{e1[1]} + {f1[1]}"),
            (f"{e0[0]} - {f0[0]}", f"{e0[1]} - {f0[1]}"),
            (f"{e1[0]} - {f1[0]}", f"{e1[1]} - {f1[1]}")]


def _butterfly(r, sign, name):
    """An r-point DFT of ``name[0..r-1]`` (cx values) in place: radix 2, 4 and 8 by steps of
    radix 2; an odd radix from the sums and differences of its input pairs, its constants
    inlined."""
    v = [(f"{name}[{t}].x", f"{name}[{t}].y") for t in range(r)]
    lines = []
    if r == 2:
        out = [(f"{v[0][0]} + {v[1][0]}", f"{v[0][1]} + {v[1][1]}"),
               (f"{v[0][0]} - {v[1][0]}", f"{v[0][1]} - {v[1][1]}")]
    elif r == 4:
        out = _dft4(v, sign)
    elif r == 8:
        half = _literal(math.sqrt(0.5))
        for t in range(4):
            lines.append(f"      const real s{t}x = {v[t][0]} + {v[t + 4][0]}, "
                         f"s{t}y = {v[t][1]} + {v[t + 4][1]};")
            lines.append(f"      const real d{t}x = {v[t][0]} - {v[t + 4][0]}, "
                         f"d{t}y = {v[t][1]} - {v[t + 4][1]};")
        # d_t times exp(sign 2 pi i t / 8)
        d1 = (f"{half} * (d1x - ({sign}) * d1y)", f"{half} * (d1y + ({sign}) * d1x)")
        d2 = _mul_i(("d2x", "d2y"), sign)
        d3 = (f"{half} * (-d3x - ({sign}) * d3y)", f"{half} * (-d3y + ({sign}) * d3x)")
        for k, (x, y) in enumerate((d1, d2, d3), 1):
            lines.append(f"      const real w{k}x = {x}, w{k}y = {y};")
        even = _dft4([(f"s{t}x", f"s{t}y") for t in range(4)], sign)
        odd = _dft4([("d0x", "d0y")] + [(f"w{k}x", f"w{k}y") for k in (1, 2, 3)], sign)
        out = [None] * 8
        out[0::2], out[1::2] = even, odd
    else:  # odd r: b[m] = a0 + sum_t u_t cos + i sign sum_t v_t sin, u, v the pair sums
        h = (r - 1) // 2
        for t in range(1, h + 1):
            lines.append(f"      const real u{t}x = {v[t][0]} + {v[r - t][0]}, "
                         f"u{t}y = {v[t][1]} + {v[r - t][1]};")
            lines.append(f"      const real v{t}x = {v[t][0]} - {v[r - t][0]}, "
                         f"v{t}y = {v[t][1]} - {v[r - t][1]};")
        out = [(" + ".join([v[0][0]] + [f"u{t}x" for t in range(1, h + 1)]),
                " + ".join([v[0][1]] + [f"u{t}y" for t in range(1, h + 1)]))]
        pairs = {}
        for m in range(1, h + 1):
            ax = " + ".join([v[0][0]] + [f"{_literal(math.cos(2 * math.pi * t * m / r))} * u{t}x"
                                         for t in range(1, h + 1)])
            ay = " + ".join([v[0][1]] + [f"{_literal(math.cos(2 * math.pi * t * m / r))} * u{t}y"
                                         for t in range(1, h + 1)])
            bx = " + ".join(f"{_literal(sign * math.sin(2 * math.pi * t * m / r))} * v{t}x"
                            for t in range(1, h + 1))
            by = " + ".join(f"{_literal(sign * math.sin(2 * math.pi * t * m / r))} * v{t}y"
                            for t in range(1, h + 1))
            lines.append(f"      const real a{m}x = {ax}, a{m}y = {ay}, b{m}x = {bx}, "
                         f"b{m}y = {by};")
            pairs[m] = (f"a{m}x - b{m}y", f"a{m}y + b{m}x")
            pairs[r - m] = (f"a{m}x + b{m}y", f"a{m}y - b{m}x")
        out += [pairs[m] for m in range(1, r)]
    lines += [f"      const cx o{m} = mkc({x}, {y});" for m, (x, y) in enumerate(out)]
    lines += [f"      {name}[{m}] = o{m};" for m in range(r)]
    return "{\n" + "\n".join(lines) + "\n      }"


def _small_stage(n, r, ns, sign, threads, stride):
    """A radix of 2 to 8, one thread per DFT: its inputs read from ``a`` (twiddled where
    ``Ns > 1``), its outputs written to ``b``."""
    g = n // r
    twiddle = ""
    if ns > 1:
        twiddle = (f"      const int k = j % {ns};\n"
                   f"      #pragma unroll\n"
                   f"      for (int t = 1; t < {r}; ++t) v[t] = cmulw(v[t], "
                   f"W[t * k * {stride * n // (ns * r)}], {sign});\n")
    return f"""  {{ // radix {r}, Ns {ns}
    for (int j = threadIdx.x; j < {g}; j += {threads}) {{
      cx v[{r}];
      #pragma unroll
      for (int t = 0; t < {r}; ++t) v[t] = a[j + t * {g}];
{twiddle}{_butterfly(r, sign, "v")}
      const int base = (j / {ns}) * {ns * r} + j % {ns};
      #pragma unroll
      for (int t = 0; t < {r}; ++t) b[base + t * {ns}] = v[t];
    }}
    __syncthreads();
    {{ cx *c = a; a = b; b = c; }}
  }}
"""


def _prime_stage(n, p, ns, sign, table, threads, stride, mt, shared):
    """An odd prime radix ``p``: first each input pair ``t, p - t`` of ``a`` (twiddled where
    ``Ns > 1``) becomes its sum and difference, in place; then each thread makes the outputs
    ``m`` and ``p - m`` of one DFT for ``mt`` values of ``m`` and writes them to ``b``.
    The threads of a warp take adjacent DFTs and the same ``m``, so that their reads of the
    sums are of adjacent values and those of the constants (``__constant__`` memory ``table``,
    or, with ``shared``, the block's copy of it made in the first pass) are of one."""
    g, h = n // p, (p - 1) // 2
    groups = -(-(h + 1) // mt)
    twiddle = ""
    if ns > 1:
        step = stride * n // (ns * p)
        twiddle = (f"      u = cmulw(u, W[t * (j % {ns}) * {step}], {sign});\n"
                   f"      w = cmulw(w, W[({p} - t) * (j % {ns}) * {step}], {sign});\n")
    copy = ""
    if shared:
        copy = (f"    __shared__ cx T{p}[{p}];\n"
                f"    for (int i = threadIdx.x; i < {p}; i += {threads}) T{p}[i] = {table}[i];\n")
        table = f"T{p}"
    return f"""  {{ // prime radix {p}, Ns {ns}
{copy}    for (int i = threadIdx.x; i < {g * h}; i += {threads}) {{
      const int j = i % {g}, t = i / {g} + 1;
      cx u = a[j + t * {g}], w = a[j + ({p} - t) * {g}];
{twiddle}      a[j + t * {g}] = mkc(u.x + w.x, u.y + w.y);
      a[j + ({p} - t) * {g}] = mkc(u.x - w.x, u.y - w.y);
    }}
    __syncthreads();
    for (int tile = threadIdx.x; tile < {g * groups}; tile += {threads}) {{
      const int j = tile % {g}, m0 = (tile / {g}) * {mt};
      const cx a0 = a[j];
      real ax[{mt}], ay[{mt}], bx[{mt}], by[{mt}];
      int tm[{mt}];
      #pragma unroll
      for (int d = 0; d < {mt}; ++d) {{
        ax[d] = a0.x; ay[d] = a0.y; bx[d] = 0; by[d] = 0; tm[d] = 0;
      }}
      for (int t = 1; t <= {h}; ++t) {{
        const cx u = a[j + t * {g}], w = a[j + ({p} - t) * {g}];
        #pragma unroll
        for (int d = 0; d < {mt}; ++d) {{
          tm[d] += m0 + d; if (tm[d] >= {p}) tm[d] -= {p};
          const cx c = {table}[tm[d] < {p} ? tm[d] : 0];
          ax[d] += u.x * c.x; ay[d] += u.y * c.x; bx[d] += w.x * c.y; by[d] += w.y * c.y;
        }}
      }}
      // b[m] = A + i S B, b[p - m] = A - i S B
      const int base = (j / {ns}) * {ns * p} + j % {ns};
      #pragma unroll
      for (int d = 0; d < {mt}; ++d) {{
        const int m = m0 + d;
        if (m > {h}) break;
        b[base + m * {ns}] = mkc(ax[d] - ({sign}) * by[d], ay[d] + ({sign}) * bx[d]);
        if (m) b[base + ({p} - m) * {ns}] = mkc(ax[d] + ({sign}) * by[d],
                                               ay[d] - ({sign}) * bx[d]);
      }}
    }}
    __syncthreads();
    {{ cx *c = a; a = b; b = c; }}
  }}
"""


def _transform(n, sign, tag, threads, stride=1, mt=4, shared=False):
    """``fft_<tag>_<f|i>(a, b)``: the ``n``-point transform of shared ``a``, ``b`` its
    scratch (all threads of the block); returns the one of them that holds the result (it
    ends synchronized). Its twiddles are ``W<tag>[stride q]`` (a table of ``stride n``
    values); ``shared``: its prime stages read their constants from shared memory."""
    body = []
    for r, ns in stages(n):
        if r in _SMALL:
            body.append(_small_stage(n, r, ns, sign, threads, stride))
        else:
            body.append(_prime_stage(n, r, ns, sign, f"CS{tag}_{r}", threads, stride, mt,
                                     shared))
    direction = "f" if sign < 0 else "i"
    return (f"__device__ __forceinline__ cx *fft_{tag}_{direction}(cx *a, cx *b) {{\n"
            f"  const cx *W = W{tag};\n" + "".join(body) + "  return a;\n}\n")


def _tables(n, tag):
    """The twiddles ``W<tag>[q] = exp(-2 pi i q / n)``, a device array that ``init_tables``
    fills, and each large prime's ``CS<tag>_p[q] = (cos, sin)(2 pi q / p)``, constant memory
    written out (read by every thread of a warp at once)."""
    decls = [f"__device__ cx W{tag}[{n}];"]
    fills = [f"  if (i < {n}) {{ double sn, c; sincospi(-2.0 * i / {n}, &sn, &c); "
             f"W{tag}[i] = mkc((real)c, (real)sn); }}"]
    for p in sorted(set(_large_primes(n))):
        q = numpy.arange(p)
        values = ", ".join(f"{{{c!r}, {sn!r}}}" for c, sn in
                           zip(numpy.cos(2 * numpy.pi * q / p).tolist(),
                               numpy.sin(2 * numpy.pi * q / p).tolist()))
        decls.append(f"__constant__ cx CS{tag}_{p}[{p}] = {{{values}}};")
    return decls, fills


_HEAD = r"""
typedef REAL real;
typedef REAL2 cx;
__device__ __forceinline__ cx mkc(real x, real y) { cx z; z.x = x; z.y = y; return z; }
// z times w (sign -1) or times conj(w) (sign +1)
__device__ __forceinline__ cx cmulw(cx z, cx w, int sign) {
  const real wy = sign < 0 ? w.y : -w.y;
  return mkc(z.x * w.x - z.y * wy, z.x * wy + z.y * w.x);
}
"""

_KERNELS = r"""
// the rows' r2c transforms: row blockIdx.x of the real N1-wide rows x, its first H1 values
// to the spectrum y (rows of H1). An even N1 = 2 M: the M-point transform of z[n] = x[2n] +
// i x[2n + 1], whose values Z give X[k] = E[k] + W^k O[k] (E and O the transforms of the even
// and odd values: (Z[k] + conj Z[M - k]) / 2 and (Z[k] - conj Z[M - k]) / 2i); an odd N1:
// the N1-point transform of the row.
extern "C" __global__ void __launch_bounds__(THREADS_R) rows_forward(const real *x, cx *y) {
  extern __shared__ cx s[];
  const real *xr = x + (long long)blockIdx.x * N1;
  cx *yr = y + (long long)blockIdx.x * H1;
#if N1 % 2 == 0
  for (int i = threadIdx.x; i < M1; i += THREADS_R) s[i] = mkc(xr[2 * i], xr[2 * i + 1]);
  __syncthreads();
  const cx *z = fft_r_f(s, s + M1);
  for (int k = threadIdx.x; k <= M1; k += THREADS_R) {
    const cx a = z[k == M1 ? 0 : k], b = z[k == 0 ? 0 : M1 - k];
    const real ex = (a.x + b.x) / 2, ey = (a.y - b.y) / 2;   // E = (a + conj b) / 2
    const real ox = (a.y + b.y) / 2, oy = (b.x - a.x) / 2;   // O = (a - conj b) / 2i
    const cx w = Wr[k];
    yr[k] = mkc(ex + w.x * ox - w.y * oy, ey + w.x * oy + w.y * ox);
  }
#else
  for (int i = threadIdx.x; i < N1; i += THREADS_R) s[i] = mkc(xr[i], 0);
  __syncthreads();
  const cx *z = fft_r_f(s, s + N1);
  for (int k = threadIdx.x; k < H1; k += THREADS_R) yr[k] = z[k];
#endif
}

// the rows' c2r transforms: row blockIdx.x of the spectrum y (rows of H1) to the N1-wide
// real rows of x, unscaled (N1 times numpy's irfft), the imaginary parts of its first value
// and, for an even N1, its last left out as numpy leaves them. An even N1 = 2 M: Z[k] = E[k] +
// i O[k] with E[k] = X[k] + conj X[M - k] and O[k] = (X[k] - conj X[M - k]) conj W^k, whose
// M-point inverse holds x[2n] + i x[2n + 1]; an odd N1: the inverse of the Hermitian
// extension, whose real part is the row.
extern "C" __global__ void __launch_bounds__(THREADS_R) rows_inverse(const cx *y, real *x) {
  extern __shared__ cx s[];
  const cx *yr = y + (long long)blockIdx.x * H1;
  real *xr = x + (long long)blockIdx.x * N1;
#if N1 % 2 == 0
  for (int k = threadIdx.x; k < M1; k += THREADS_R) {
    cx a = yr[k], b = yr[M1 - k];
    if (k == 0) { a.y = 0; b.y = 0; }
    const real ex = a.x + b.x, ey = a.y - b.y, dx = a.x - b.x, dy = a.y + b.y;
    const cx w = Wr[k];  // O = d conj(w)
    const real ox = dx * w.x + dy * w.y, oy = dy * w.x - dx * w.y;
    s[k] = mkc(ex - oy, ey + ox);
  }
  __syncthreads();
  const cx *z = fft_r_i(s, s + M1);
  for (int n = threadIdx.x; n < M1; n += THREADS_R) { xr[2 * n] = z[n].x; xr[2 * n + 1] = z[n].y; }
#else
  for (int k = threadIdx.x; k < N1; k += THREADS_R) {
    cx v = yr[k < H1 ? k : N1 - k];
    if (k == 0) v.y = 0;
    s[k] = k < H1 ? v : mkc(v.x, -v.y);
  }
  __syncthreads();
  const cx *z = fft_r_i(s, s + N1);
  for (int i = threadIdx.x; i < N1; i += THREADS_R) xr[i] = z[i].x;
#endif
}

// the columns' transforms in one direction, in place: column blockIdx.x of the spectrum y
// (N0 rows of H1) of plane blockIdx.y (planes N0 x H1 apart)
#define COLUMNS_PASS(NAME, TRANSFORM) \
  extern "C" __global__ void __launch_bounds__(THREADS_C) NAME(cx *y) { \
    extern __shared__ cx s[]; \
    const int col = blockIdx.x; \
    cx *yp = y + (long long)blockIdx.y * N0 * H1; \
    for (int r = threadIdx.x; r < N0; r += THREADS_C) s[r] = yp[(long long)r * H1 + col]; \
    __syncthreads(); \
    const cx *f = TRANSFORM(s, s + N0); \
    for (int k = threadIdx.x; k < N0; k += THREADS_C) yp[(long long)k * H1 + col] = f[k]; \
  }
COLUMNS_PASS(columns_forward, fft_c_f)
COLUMNS_PASS(columns_inverse, fft_c_i)

#ifdef ACCELMATH_ELEMENT
// one pass down column blockIdx.x of the spectrum y (N0 rows of H1): forward, the element
// function on each value (row k, column col), times scale, inverse, in place
extern "C" __global__ void __launch_bounds__(THREADS_C) columns(cx *y, real scale,
                                                             const Element e) {
  extern __shared__ cx s[];
  const int col = blockIdx.x;
  for (int r = threadIdx.x; r < N0; r += THREADS_C) s[r] = y[(long long)r * H1 + col];
  __syncthreads();
  cx *f = fft_c_f(s, s + N0);
  for (int k = threadIdx.x; k < N0; k += THREADS_C) {
    const cx v = f[k];
    const ELEMENT_TYPE z = accelmath_element(mk(v.x, v.y), accelmath_load(0, k, col, e), 0, k,
                                             col, e);
    f[k] = mkc(z.x * scale, z.y * scale);
  }
  __syncthreads();
  const cx *g = fft_c_i(f, f == s ? s + N0 : s);
  for (int r = threadIdx.x; r < N0; r += THREADS_C) y[(long long)r * H1 + col] = g[r];
}
#endif

extern "C" __global__ void init_tables() {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
TABLE_FILLS
}
"""


def filter_source(n0, n1, dtype, element=None, threads=None):
    """The source of the kernels of a 2-D filter of an ``n0 x n1`` real array of
    ``dtype`` (float32 or float64): ``rows_forward``, ``rows_inverse``, ``columns_forward``,
    ``columns_inverse`` (a real 2-D transform's column passes, in place) and, with ``element``
    (:func:`accelmath.fusion._cuda.element_source` of the element function, axis 0, of the
    spectrum's complex dtype), ``columns``; ``init_tables`` fills the twiddles once a module is
    loaded. ``threads``: ``((threads, m per thread), (those))`` of the rows' and the columns'
    kernels (default: :data:`THREADS` of ``dtype``); each kernel takes the shared memory of its
    transform (:func:`shared_bytes`)."""
    (rows_threads, rows_mt), (columns_threads, columns_mt) = threads or THREADS[dtype]
    shared = SHARED_CONSTANTS[dtype]
    real, pair, ctype = (("float", "float2", "c64") if dtype == "float32"
                         else ("double", "double2", "c128"))
    decls_r, fills_r = _tables(n1, "r")
    decls_c, fills_c = _tables(n0, "c")
    half = n1 % 2 == 0
    parts = [f"#define REAL {real}\n#define REAL2 {pair}\n#define THREADS_R {rows_threads}\n"
             f"#define THREADS_C {columns_threads}\n"
             f"#define N0 {n0}\n#define N1 {n1}\n#define H1 {n1 // 2 + 1}\n"
             f"#define M1 {n1 // 2}\n"
             f"#define ELEMENT_TYPE {ctype}\n",
             _HEAD, "\n".join(decls_r + decls_c) + "\n",
             *(_transform(row_length(n1), sign, "r", rows_threads, 2 if half else 1, rows_mt,
                          shared) for sign in (-1, 1)),
             *(_transform(n0, sign, "c", columns_threads, 1, columns_mt, shared)
               for sign in (-1, 1)),
             _KERNELS.replace("TABLE_FILLS", "\n".join(fills_r + fills_c))]
    if element is not None:
        parts.insert(0, element + "#define ACCELMATH_ELEMENT\n")
    return "".join(parts)
