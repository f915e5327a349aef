"""The Fourier side of the subtraction: the planes and their transforms, the correlation maps
at the few lags the normal equations read, and the difference image.

One :class:`Spectra` is made per image shape, configuration and array kind, and keeps its
plans, matrices and buffers across pairs:

- the planes ``X_ij = I x^i y^j`` and J, stacked, go through a real-to-complex plan
  (``accelmath.fft.FFT``, batched over the planes where they are small) into their half
  spectra;
- a correlation map ``C_XY(l) = sum_r X(r) Y(r + l)`` is wanted at lags ``-2w..2w`` per axis
  only: from the half spectrum ``S = conj(F X) F Y`` it is
  ``Re(sum_u e^{2 pi i u l0 / N0} sum_v c_v S(u, v) e^{2 pi i v l1 / N1}) / (N0 N1)`` with
  ``c_v = 1`` at v = 0 and at the Nyquist column, else 2: two products with small DFT
  matrices instead of an inverse transform. The products run over blocks of rows, all maps
  of a block at once, so the memory they take is bounded (``chunk_bytes``);
- the maps against the polynomial background planes need no transform: with ``T_pq`` a
  product of a row and a column polynomial, ``C_XT(s)`` is ``U_p X V_q^T`` with U, V the
  polynomials shifted by s (two matrix products of the real planes);
- the difference's spectrum is ``F J - sum_ij F(X_ij) Khat_ij``, with ``Khat_ij`` the DFT of
  the term's (2w + 1)^2 kernel placed modulo the shape (small DFT matrices again), and one
  complex-to-real plan gives the difference; the background polynomial is subtracted after.

The element-wise passes (the planes, the spectrum products, the difference's spectrum) run
on a GPU as the subtraction's own kernels (:mod:`._kernels`, one compile kept in the store),
elsewhere as the array package's operations.
"""

import numpy

from accelmath import fft, linalg
from accelmath.subtraction import _direct, _kernels
from accelmath.subtraction._model import coordinates

__all__ = ["Spectra", "lag_matrices", "kernel_matrices", "shifted_polynomials", "CHUNK_BYTES",
           "HOST_CHUNK_BYTES", "BATCH_BYTES", "DIRECT_WAIT_S"]

# Bytes of the products of one block of rows (all maps of the block), which bounds the memory
# the correlation maps take beside the spectra: on a GPU, where fewer and larger products run
# faster (an H200 at 4088^2: 4.3 ms for the products stage at 256 MB and 128 MB to 2 GB alike
# within 0.7 ms, 14 ms at 32 MB, 67 at 8 MB), and on the CPU, where a first call writing a
# new buffer of that size waits for the system to map its pages (the 2-core CPU machine at
# 1024^2: a first call of 0.96-1.16 s at 256 MB, 0.34-0.40 at 16 MB, warm calls alike)
CHUNK_BYTES = 256 * 2**20
HOST_CHUNK_BYTES = 16 * 2**20
# The planes go through one batched transform up to this many bytes, else one at a time:
# a transform's work areas (and its trial runs when planned) grow with its batch.
BATCH_BYTES = 512 * 2**20
# The longest a first pair waits at its subtract stage for the direct kernel's compile, in
# seconds: about what the Fourier form's inverse plan costs instead (Spectra.direct_ready).
DIRECT_WAIT_S = 0.2


def _phase(n, k, sign):
    """``exp(sign * 2 pi i k / n)`` for integer arrays k, the argument reduced modulo n first
    (exact for any k): the n roots of unity computed once, then read at ``k mod n``."""
    roots = numpy.exp(sign * 2j * numpy.pi * (numpy.arange(n) / n))
    return roots[numpy.mod(k, n)]


def lag_matrices(shape, lags):
    """The two DFT matrices that sample a correlation map at ``lags`` from the half
    spectrum of its product: ``E1T`` (N0, nl) and ``E2`` (N1 // 2 + 1, nl), the latter
    carrying the half-spectrum weights and the 1 / (N0 N1).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath.subtraction._spectra import lag_matrices
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.standard_normal((2, 8, 6))
    >>> s = np.conj(np.fft.rfft2(x)) * np.fft.rfft2(y)
    >>> e1t, e2 = lag_matrices((8, 6), np.arange(-2, 3))
    >>> maps = (e1t.T @ s @ e2).real
    >>> direct = sum(x[r, c] * y[(r + 1) % 8, (c - 2) % 6] for r in range(8) for c in range(6))
    >>> bool(np.isclose(maps[3, 0], direct))
    True
    """
    n0, n1 = shape
    m = n1 // 2 + 1
    weights = numpy.full(m, 2.0)
    weights[0] = 1.0
    if n1 % 2 == 0:
        weights[-1] = 1.0
    e1t = _phase(n0, numpy.arange(n0)[:, None] * lags[None, :], 1)
    e2 = _phase(n1, numpy.arange(m)[:, None] * lags[None, :], 1) * (weights[:, None] / (n0 * n1))
    return e1t, e2


def kernel_matrices(shape, half_width):
    """The DFT matrices of a (2w + 1)^2 kernel placed modulo ``shape``: ``W0`` (N0, 2w + 1)
    and ``W1T`` (2w + 1, N1 // 2 + 1), so that the half spectrum of kernel k is
    ``W0 @ k @ W1T``."""
    n0, n1 = shape
    offsets = numpy.arange(-half_width, half_width + 1)
    w0 = _phase(n0, numpy.arange(n0)[:, None] * offsets[None, :], -1)
    w1t = _phase(n1, offsets[:, None] * numpy.arange(n1 // 2 + 1)[None, :], -1)
    return w0, w1t


def shifted_polynomials(n, order, half_width):
    """``((order + 1) * (2w + 1), n)``: row ``p * (2w + 1) + s + w`` holds ``x^p`` moved by
    s, ``x[(r + s) mod n] ** p``, x the scaled coordinate of an axis of length n."""
    x = coordinates((n,))[0]
    shifts = numpy.arange(-half_width, half_width + 1)
    index = numpy.mod(numpy.arange(n)[None, :] + shifts[:, None], n)
    moved = x[index]
    return numpy.concatenate([moved ** p for p in range(order + 1)])


class Spectra:
    """Plans, matrices and buffers for one shape, configuration and array kind.

    Parameters
    ----------
    configuration : Configuration
    rules : LagRules
    kind : ArrayKind
    chunk_bytes : int, optional
        Bytes of the products of one block of rows (default :data:`CHUNK_BYTES` on a GPU,
        :data:`HOST_CHUNK_BYTES` elsewhere).
    workers : int, optional
        CPU threads of the host transforms.
    """

    def __init__(self, configuration, rules, kind, chunk_bytes=None, workers=None):
        self.configuration, self.kind = configuration, kind
        if chunk_bytes is None:
            chunk_bytes = CHUNK_BYTES if kind.on_gpu else HOST_CHUNK_BYTES
        n0, n1 = configuration.shape
        w = configuration.half_width
        m = n1 // 2 + 1
        self.kernel_terms = configuration.kernel_terms
        fij = len(self.kernel_terms)
        self.fij = fij
        self.maps = len(rules.pairs[0]) + fij  # kernel-plane pairs, then each plane with J
        planes = fij + 1
        self.batch = planes if planes * n0 * n1 * 8 <= BATCH_BYTES else 1
        self.on_gpu = kind.on_gpu
        self._used = False  # (whether a pair has run: renew_stale_plans)
        self._waited = False  # (for the direct kernel's compile: direct_ready)
        with kind.active():
            self.direct = self.on_gpu and _direct.applies(w, self.kernel_terms,
                                                          configuration.shape)
            if self.on_gpu:  # the kernels compile (or load) while the plans are made
                _kernels.prepare(kind.ordinal)
                linalg.prepare("float64", device=kind.ordinal)
                if self.direct:  # (after those: a first pair needs it last)
                    _direct.prepare(kind.ordinal, w, self.kernel_terms, configuration.shape)
            # the plans first: their trial runs (when the store holds no choice yet) take
            # memory that the buffers take afterwards (the inverse plan of a Fourier form
            # that runs where the direct kernel did not compile is made later, beside them)
            self._workers = workers
            self._make_plans(kind.empty((self.batch, n0, n1), "float64"),
                             kind.empty((n0, m), "complex128"))
            self.stack = kind.empty((planes, n0, n1), "float64")
            self.spectra = kind.empty((planes, n0, m), "complex128")
            self.rows = max(1, min(n0, chunk_bytes // (self.maps * m * 16)))
            self._products = kind.empty((self.maps * self.rows * m,), "complex128")
            if not self.on_gpu:
                self._conjugates = kind.empty((fij * self.rows * m,), "complex128")
            self._spectrum = kind.empty((n0, m), "complex128")
            self.ones = kind.asarray(numpy.ones(max(n0, n1)))  # (for kind.total)
            e1t, e2 = lag_matrices(configuration.shape, rules.lags)
            self._e1t, self._e2 = kind.asarray(e1t), kind.asarray(e2)
            nl = e2.shape[1]
            self._maps = kind.empty((nl, self.maps * nl), "complex128")
            w0, w1t = kernel_matrices(configuration.shape, w)
            self._w0, self._w1t = kind.asarray(w0), kind.asarray(w1t)
            x, y = coordinates(configuration.shape)
            self._x, self._y = kind.asarray(x[:, None]), kind.asarray(y[None, :])
            self._exponents = kind.asarray(numpy.array(self.kernel_terms, dtype=numpy.int64))
            order = configuration.background_order
            self._u = kind.asarray(shifted_polynomials(n0, order, w))
            self._vt = kind.asarray(shifted_polynomials(n1, order, w).T.copy())
            side_b = self._vt.shape[1]
            self._polynomial = kind.empty((planes, side_b, side_b), "float64")
            self._xp = kind.asarray(numpy.stack([x ** p for p in range(order + 1)], axis=1))
            y_powers = numpy.stack([y ** q for q in range(order + 1)])
            self._y_powers = y_powers

    # --- the planes and their transforms ---------------------------------------------------

    def fill(self, convolved, other, mask):
        """The planes ``I x^i y^j`` and J into the stack (times ``mask`` where given, a
        C-contiguous bool image); returns the count of the mask's true pixels as a 0-d
        array of this kind (no read back), or None without a mask."""
        kind, stack = self.kind, self.stack
        if self.on_gpu:
            selected = None if mask is None else kind.zeros((), "int64")
            _kernels.planes(convolved, other, mask, self._x, self._y, self._exponents, stack,
                            selected)
            return selected
        fij = self.fij
        selected = None
        if mask is None:
            stack[0] = convolved
            stack[fij] = other
        else:  # (as a float64 factor: one kind of product for every plane)
            mask = kind.float64(mask)
            selected = kind.total(mask, self.ones)
            kind.multiply(convolved, mask, out=stack[0])
            kind.multiply(other, mask, out=stack[fij])
        index = {(0, 0): 0}
        for k, (i, j) in enumerate(self.kernel_terms[1:], start=1):
            # each term from a lower one: one pass over the image
            parent, factor = ((i, j - 1), self._y) if j else ((i - 1, j), self._x)
            kind.multiply(stack[index[parent]], factor, out=stack[k])
            index[(i, j)] = k
        return selected

    def _make_plans(self, planes, spectrum):
        """The forward plan of ``planes`` (batch, N0, N1), and the inverse one of
        ``spectrum`` (N0, N1 // 2 + 1) unless the direct kernel takes the configuration:
        only the Fourier form of the subtract stage takes it (then made by
        :meth:`_inverse_plan`, where that kernel did not compile); their templates."""
        self._forward = fft.FFT(planes, axes=(1, 2), workers=self._workers)
        self._inverse = None
        if not self.direct:
            self._inverse_plan(spectrum)

    def _inverse_plan(self, spectrum):
        """The inverse plan, made of template ``spectrum`` where there is none yet."""
        if self._inverse is None:
            self._inverse = fft.FFT(spectrum, axes=(0, 1), kind="c2r",
                                    last_axis_size=self.configuration.shape[1],
                                    workers=self._workers)
        return self._inverse

    def renew_stale_plans(self):
        """Make the plans again where one went without a kernel that was compiling when it
        was made and has compiled since (:attr:`accelmath.fft.FFT.stale`: a first
        subtractor on a machine whose store is empty), the buffers their templates: called
        before a pair fills them. Not before the first pair: the plans were just made, and
        a one-pair call (:func:`~accelmath.subtraction.subtract`) would spend more on
        timing the new plans than they save it."""
        if not self._used:
            self._used = True
            return
        old = [plan for plan in (self._forward, self._inverse) if plan is not None]
        if any(plan.stale for plan in old):
            self._make_plans(self.stack[:self.batch], self._spectrum)
            for plan in old:
                plan.free()

    def transform(self):
        """The half spectra of the stack."""
        batch = self.batch
        for k in range(0, self.stack.shape[0], batch):
            self._forward.forward(self.stack[k:k + batch], out=self.spectra[k:k + batch])

    # --- the solve pass --------------------------------------------------------------------

    def correlations(self):
        """``(nl, maps, nl)`` complex, a buffer of the spectra's: at ``[l0 + 2w, k,
        l1 + 2w]`` the correlation map k at lag (l0, l1) in its real part, l0 and l1 in
        -2w..2w; the kernel-plane pairs first (in the order of ``LagRules.pairs``), then
        each kernel plane with J."""
        kind, spectra = self.kind, self.spectra
        n0, m = spectra.shape[1:]
        count, nl = self.maps, self._e2.shape[1]
        total = self._maps
        for start in range(0, n0, self.rows):
            stop = min(n0, start + self.rows)
            rows = stop - start
            products = self._products[:rows * count * m].reshape(rows, count, m)
            self._pair_products(start, stop, products)
            # one product over every map of the block, entries [r, k, l1]
            columns = kind.matmul(products.reshape(rows * count, m), self._e2)
            kind.matmul(self._e1t[start:stop].T, columns.reshape(rows, count * nl), c=total,
                        beta=0 if start == 0 else 1, out=total)
        return total.reshape(nl, count, nl)

    def _pair_products(self, start, stop, products):
        """``products`` (rows, maps, m): ``conj(S_a) S_b`` of the rows [start, stop) for
        the pairs of kernel planes a <= b, then for each kernel plane with J."""
        kind, spectra, fij = self.kind, self.spectra, self.fij
        if self.on_gpu:
            _kernels.pair_products(spectra, start, stop - start, products)
            return
        rows, m = stop - start, spectra.shape[2]
        conjugates = self._conjugates[:fij * rows * m].reshape(fij, rows, m)
        kind.conj(spectra[:fij, start:stop], out=conjugates)
        pairs = [(a, b) for a in range(fij) for b in range(a, fij)]
        for k, (a, b) in enumerate(pairs + [(a, fij) for a in range(fij)]):
            kind.multiply(conjugates[a], spectra[b, start:stop], out=products[:, k])

    def polynomial_correlations(self):
        """``(Fij + 1, (DB + 1)(2w + 1), (DB + 1)(2w + 1))``, a buffer of the spectra's:
        each plane of the stack correlated with the background polynomials ``x^p y^q``, at
        shifts -w..w per axis (entry ``[k, p (2w + 1) + s0 + w, q (2w + 1) + s1 + w]``)."""
        kind, stack = self.kind, self.stack
        planes, n0, n1 = stack.shape
        columns = kind.matmul(stack.reshape(planes * n0, n1), self._vt)
        for k in range(planes):
            kind.matmul(self._u, columns[k * n0:(k + 1) * n0], out=self._polynomial[k])
        return self._polynomial

    def free(self):
        """Release the plans (idempotent)."""
        self._forward.free()
        if self._inverse is not None:
            self._inverse.free()

    # --- the subtract pass -----------------------------------------------------------------

    def difference(self, kernels, background, flip):
        """The difference image ``J - sum_ij X_ij (*) k_ij - background`` (negated where
        ``flip``), from the spectra of the unmasked planes.

        ``kernels`` is the (2w + 1, Fij (2w + 1)) complex array of the terms' kernels (the
        delta basis collapsed) side by side, ``kernels[:, ij (2w + 1) + b] = k_ij[:, b]``;
        ``background`` the (DB + 1, DB + 1) NumPy array of the
        background coefficients d[p, q] (zero where p + q > DB).
        """
        kind, spectra, fd = self.kind, self.spectra, self._spectrum
        n0, m = fd.shape
        fij = self.fij
        for start in range(0, n0, self.rows):
            stop = min(n0, start + self.rows)
            rows = stop - start
            khat = self._products[:rows * fij * m].reshape(rows, fij, m)
            left = kind.matmul(self._w0[start:stop], kernels)  # [r, ij, b]
            kind.matmul(left.reshape(rows * fij, -1), self._w1t,
                        out=khat.reshape(rows * fij, m))
            if self.on_gpu:
                _kernels.difference_spectrum(spectra, start, rows, khat, flip, fd)
                continue
            khat = khat.swapaxes(0, 1)
            kind.multiply(spectra[:fij, start:stop], khat, out=khat)
            kind.sum_first(khat, out=fd[start:stop])
            if flip:
                kind.subtract(fd[start:stop], spectra[fij, start:stop], out=fd[start:stop])
            else:
                kind.subtract(spectra[fij, start:stop], fd[start:stop], out=fd[start:stop])
        image = self._inverse_plan(fd).inverse(fd)
        return self._background(image, background, flip)

    def direct_ready(self):
        """Whether :meth:`direct_difference` runs here: on a GPU, for a configuration the
        direct kernel takes, once that kernel is compiled. Its compile starts in the
        background when the spectra are made, after the compiles a first pair waits for
        (beside them it made them slower); a first pair that reaches the subtract stage
        before it has ended waits for it up to :data:`DIRECT_WAIT_S`, rather than make the
        Fourier form's plan (on an H200 about 0.1 s with an empty store, against tens of ms
        for what is left of the compile, but up to a second for a machine's very first
        NVRTC compiles, read from a cold disk). Meanwhile, or where it could not compile,
        the Fourier form runs."""
        if not self.direct:
            return False
        w, device = self.configuration.half_width, self.kind.ordinal
        shape = self.configuration.shape
        if _direct.ready(device, w, self.kernel_terms, shape):
            return True
        compiling = _direct.prepare(device, w, self.kernel_terms, shape)  # (started once)
        if compiling is not None and not self._waited:
            self._waited = True
            compiling.join(DIRECT_WAIT_S)
        return _direct.ready(device, w, self.kernel_terms, shape)

    def direct_difference(self, convolved, other, kernels, background, flip):
        """The same difference image as :meth:`difference`, computed directly from the images
        (on a GPU, :mod:`._direct`: no spectrum of the unmasked planes needed); ``kernels``
        the (Fij, 2w + 1, 2w + 1) float64 NumPy array of the terms' kernels."""
        image = self.kind.empty(self.configuration.shape, "float64")
        _direct.direct_difference(convolved, other, self._x, self._y, kernels,
                                  self.kernel_terms, flip, image)
        return self._background(image, background, flip)

    def _background(self, image, background, flip):
        """``image`` with the background plane x^p (d y^q) taken off (added where ``flip``),
        in place."""
        columns = self.kind.asarray(numpy.asarray(background) @ self._y_powers)
        self.kind.matmul(self._xp, columns, c=image, alpha=1.0 if flip else -1.0, beta=1.0,
                         out=image)
        return image
