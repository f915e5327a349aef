"""Arithmetic on the four element types of the linear-algebra kernels (``float``, ``double``,
``float2``, ``double2``: float32, float64, complex64, complex128), as CUDA C++ overloads that
every linear-algebra kernel source starts with (:data:`ARITHMETIC`): zero, one and NaN of a
type, conjugates, products, fused ``acc - a * b``, reciprocals (Smith's method for complex),
finiteness, magnitudes and the pivot-search key of LU kernels; and ``report``, which the
solvers' kernels end each system with. The solvers' kernels of small matrices are compiled
once per element type: :data:`ELEMENT_TYPES` names it ``T`` (its real type ``R``, the
pivot-search key's ``Key``) from ``-DSMALL_DTYPE``, the code :data:`DTYPES` gives, and
once per operation, ``-DSMALL_OP`` the code :data:`OPS` gives.
"""

__all__ = ["ARITHMETIC", "DTYPES", "ELEMENT_TYPES", "NONFINITE", "OPS"]

# operation -> SMALL_OP's code (inv solves against identity columns made in registers)
OPS = {"solve": 0, "inv": 1, "cholesky": 2}

#: The info codes of the solvers' kernels for a system whose first operand (A), or else its
#: second (B), holds a NaN or an infinity: -1 - the operand's index (the kernels' NONFINITE_A
#: and NONFINITE_B).
NONFINITE = (-1, -2)

# dtype -> SMALL_DTYPE's code
DTYPES = {"float32": 0, "float64": 1, "complex64": 2, "complex128": 3}

ELEMENT_TYPES = r"""
#if SMALL_DTYPE == 0
typedef float T; typedef float R; typedef unsigned int Key;
#elif SMALL_DTYPE == 1
typedef double T; typedef double R; typedef unsigned long long Key;
#elif SMALL_DTYPE == 2
typedef float2 T; typedef float R; typedef unsigned int Key;
#else
typedef double2 T; typedef double R; typedef unsigned long long Key;
#endif
"""

ARITHMETIC = r"""
__device__ __forceinline__ float zero_of(float) { return 0.f; }
__device__ __forceinline__ double zero_of(double) { return 0.; }
__device__ __forceinline__ float2 zero_of(float2) { return make_float2(0.f, 0.f); }
__device__ __forceinline__ double2 zero_of(double2) { return make_double2(0., 0.); }
__device__ __forceinline__ float real_to(float r, float) { return r; }
__device__ __forceinline__ double real_to(double r, double) { return r; }
__device__ __forceinline__ float2 real_to(float r, float2) { return make_float2(r, 0.f); }
__device__ __forceinline__ double2 real_to(double r, double2) { return make_double2(r, 0.); }
__device__ __forceinline__ float real_of(float x) { return x; }
__device__ __forceinline__ double real_of(double x) { return x; }
__device__ __forceinline__ float real_of(float2 x) { return x.x; }
__device__ __forceinline__ double real_of(double2 x) { return x.x; }
__device__ __forceinline__ float conj_of(float x) { return x; }
__device__ __forceinline__ double conj_of(double x) { return x; }
__device__ __forceinline__ float2 conj_of(float2 x) { return make_float2(x.x, -x.y); }
__device__ __forceinline__ double2 conj_of(double2 x) { return make_double2(x.x, -x.y); }
// |x|, or |re| + |im| as LAPACK's i?amax pivots by
__device__ __forceinline__ float mag1(float x) { return fabsf(x); }
__device__ __forceinline__ double mag1(double x) { return fabs(x); }
__device__ __forceinline__ float mag1(float2 x) { return fabsf(x.x) + fabsf(x.y); }
__device__ __forceinline__ double mag1(double2 x) { return fabs(x.x) + fabs(x.y); }
__device__ __forceinline__ bool is_zero(float x) { return x == 0.f; }
__device__ __forceinline__ bool is_zero(double x) { return x == 0.; }
__device__ __forceinline__ bool is_zero(float2 x) { return x.x == 0.f && x.y == 0.f; }
__device__ __forceinline__ bool is_zero(double2 x) { return x.x == 0. && x.y == 0.; }
__device__ __forceinline__ float nan_of(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double nan_of(double) { return __longlong_as_double(0x7ff8000000000000ll); }
__device__ __forceinline__ float2 nan_of(float2 x) { return make_float2(nan_of(0.f), nan_of(0.f)); }
__device__ __forceinline__ double2 nan_of(double2 x) { return make_double2(nan_of(0.), nan_of(0.)); }
__device__ __forceinline__ float mul(float a, float b) { return a * b; }
__device__ __forceinline__ double mul(double a, double b) { return a * b; }
__device__ __forceinline__ float2 mul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ double2 mul(double2 a, double2 b) {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ __forceinline__ float scale(float a, float r) { return a * r; }
__device__ __forceinline__ double scale(double a, double r) { return a * r; }
__device__ __forceinline__ float2 scale(float2 a, float r) { return make_float2(a.x * r, a.y * r); }
__device__ __forceinline__ double2 scale(double2 a, double r) { return make_double2(a.x * r, a.y * r); }
// acc - a * b
__device__ __forceinline__ float sub_mul(float acc, float a, float b) { return fmaf(-a, b, acc); }
__device__ __forceinline__ double sub_mul(double acc, double a, double b) { return fma(-a, b, acc); }
__device__ __forceinline__ float2 sub_mul(float2 acc, float2 a, float2 b) {
    return make_float2(fmaf(a.y, b.y, fmaf(-a.x, b.x, acc.x)),
                       fmaf(-a.y, b.x, fmaf(-a.x, b.y, acc.y))); }
__device__ __forceinline__ double2 sub_mul(double2 acc, double2 a, double2 b) {
    return make_double2(fma(a.y, b.y, fma(-a.x, b.x, acc.x)),
                        fma(-a.y, b.x, fma(-a.x, b.y, acc.y))); }
// acc - a * conj(b)
__device__ __forceinline__ float sub_mul_conj(float acc, float a, float b) { return fmaf(-a, b, acc); }
__device__ __forceinline__ double sub_mul_conj(double acc, double a, double b) { return fma(-a, b, acc); }
__device__ __forceinline__ float2 sub_mul_conj(float2 acc, float2 a, float2 b) {
    return sub_mul(acc, a, conj_of(b)); }
__device__ __forceinline__ double2 sub_mul_conj(double2 acc, double2 a, double2 b) {
    return sub_mul(acc, a, conj_of(b)); }
// 1 / z; Smith's method for complex, so that |z| near the range's ends neither overflows
// nor underflows in |z|^2
__device__ __forceinline__ float recip(float x) { return 1.f / x; }
__device__ __forceinline__ double recip(double x) { return 1. / x; }
template <typename C, typename F>
__device__ __forceinline__ C recip_complex(C z) {
    C r;
    if (fabs(z.x) >= fabs(z.y)) {
        F t = z.y / z.x, d = z.x + z.y * t;
        r.x = F(1) / d; r.y = -t / d;
    } else {
        F t = z.x / z.y, d = z.x * t + z.y;
        r.x = t / d; r.y = F(-1) / d;
    }
    return r;
}
__device__ __forceinline__ float2 recip(float2 z) { return recip_complex<float2, float>(z); }
__device__ __forceinline__ double2 recip(double2 z) { return recip_complex<double2, double>(z); }

// the pivot search key: the magnitude's bits (non-negative floats order as unsigned ints,
// NaN above everything) with the low BITS bits replaced by 2^BITS - 1 - row (rows below
// 2^BITS), so that the maximum is one value every lane agrees on and ties go to the first
// row; 0 for rows not candidates
template <int BITS = 6>
__device__ __forceinline__ unsigned int key_of(float m, int row) {
    return (__float_as_uint(m) & ~((1u << BITS) - 1u)) | (unsigned)((1 << BITS) - 1 - row); }
template <int BITS = 6>
__device__ __forceinline__ unsigned long long key_of(double m, int row) {
    return ((unsigned long long)__double_as_longlong(m) & ~((1ull << BITS) - 1ull))
           | (unsigned long long)((1 << BITS) - 1 - row); }
__device__ __forceinline__ float one_of(float) { return 1.f; }
__device__ __forceinline__ double one_of(double) { return 1.; }
__device__ __forceinline__ float2 one_of(float2) { return make_float2(1.f, 0.f); }
__device__ __forceinline__ double2 one_of(double2) { return make_double2(1., 0.); }
__device__ __forceinline__ bool finite_of(float v) { return isfinite(v); }
__device__ __forceinline__ bool finite_of(double v) { return isfinite(v); }
__device__ __forceinline__ bool finite_of(float2 v) { return isfinite(v.x) && isfinite(v.y); }
__device__ __forceinline__ bool finite_of(double2 v) { return isfinite(v.x) && isfinite(v.y); }
// |z| (hypot for complex)
__device__ __forceinline__ float abs_of(float v) { return fabsf(v); }
__device__ __forceinline__ double abs_of(double v) { return fabs(v); }
__device__ __forceinline__ float abs_of(float2 v) { return hypotf(v.x, v.y); }
__device__ __forceinline__ double abs_of(double2 v) { return hypot(v.x, v.y); }
// the info codes of a system whose A, or else B, holds a NaN or an infinity (see NONFINITE)
constexpr int NONFINITE_A = -1, NONFINITE_B = -2;
// a system's info code, and where it failed the caller's flag raised: a word of page-locked
// host memory (at its host address: unified addressing), read once the stream is done
// without a copy; null for none
__device__ __forceinline__ void report(int* info, int* flag, long long b, int failed) {
    info[b] = failed;
    if (failed && flag) *(volatile int*)flag = 1;
}
"""
