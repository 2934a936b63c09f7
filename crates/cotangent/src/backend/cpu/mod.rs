//! The CPU backend: a typed buffer per dtype and generic kernels over strided layouts.

/// The dtype dispatch of the real floating-point kernels, written once: runs `$body` with
/// `$a: &[T]` the buffer of `$s` and `T` (the name given as `$T`) its element type, `f32`
/// or `f64`; for any other dtype, `DTypeMismatch` naming `$op` if one of the further
/// operands `[$o, ...]` has another dtype than `$s`, else `UnsupportedDType`. Further
/// operands are read inside the body with [`typed`], which checks their dtype. A dtype
/// added to this kernel family (complex, say) is one arm here.
macro_rules! real {
    ($op:expr, $s:expr, [$($o:expr),*], |$a:ident: $T:ident| $body:expr) => {
        match $s {
            CpuStorage::F32(v) => {
                type $T = f32;
                let $a: &[$T] = v;
                $body
            }
            CpuStorage::F64(v) => {
                type $T = f64;
                let $a: &[$T] = v;
                $body
            }
            other => {
                $(
                    if $o.dtype() != other.dtype() {
                        return Err(Error::DTypeMismatch {
                            op: $op,
                            lhs: other.dtype(),
                            rhs: $o.dtype(),
                        });
                    }
                )*
                return Err(Error::UnsupportedDType { op: $op, dtype: other.dtype() });
            }
        }
    };
}

/// For complex `$s` (`C64`, `C128`), returns `Ok($body)` from the enclosing function
/// with `$a: &[$T]` its elements (`$T` the `num_complex` type); other dtypes fall
/// through, to [`real!`] or an error.
macro_rules! complex {
    ($s:expr, |$a:ident: $T:ident| $body:expr) => {
        match $s {
            CpuStorage::C64(v) => {
                type $T = Complex<f32>;
                let $a: &[$T] = v;
                return Ok($body);
            }
            CpuStorage::C128(v) => {
                type $T = Complex<f64>;
                let $a: &[$T] = v;
                return Ok($body);
            }
            _ => {}
        }
    };
}

mod fast;

pub(crate) mod linalg;
pub(crate) mod matmul;
pub(crate) mod norm;
#[cfg(target_arch = "x86_64")]
mod norm_wide;
pub(crate) mod par;
pub(crate) mod pool;
pub(crate) mod simd;
pub(crate) mod strided;
#[cfg(target_arch = "x86_64")]
pub(crate) mod wide;

/// A xorshift64* generator: reproducible inputs for the kernels' tests.
#[cfg(test)]
pub(crate) struct XorShift(pub(crate) u64);

#[cfg(test)]
impl XorShift {
    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

use half::{bf16, f16};
use num_complex::Complex;

use super::{
    BackendStorage, BinaryKernel, CmpOp, ComplexPart, QrSpec, ReduceOp, TriSolve, UnaryKernel,
};
use crate::complex::ComplexFloat;
use crate::device::Device;
use crate::dtype::{DType, Element, Float};
use crate::error::{Error, Result};
use crate::host::HostBuffer;
use crate::layout::Layout;
use crate::shape::Shape;
use pool::Pooled;
use strided::{eval, eval_fresh, eval_row, walk, MapRow, RowKernel, WhereRow, ZipRow};

/// The CPU device's storage: its tensors live in host memory, so a buffer is a
/// [`HostBuffer`] (in and out of the seam without conversion).
pub(crate) type CpuStorage = HostBuffer;

impl CpuStorage {
    /// Hands a large f32/f64/i64/complex buffer to the cache for reuse (leaves `self`
    /// empty).
    pub(crate) fn recycle(&mut self) {
        match self {
            CpuStorage::F64(v) => pool::give(std::mem::take(v)),
            CpuStorage::F32(v) => pool::give(std::mem::take(v)),
            CpuStorage::I64(v) => pool::give(std::mem::take(v)),
            CpuStorage::C64(v) => pool::give(std::mem::take(v)),
            CpuStorage::C128(v) => pool::give(std::mem::take(v)),
            _ => {}
        }
    }
}

/// Applies `$body` to the buffer whatever its dtype, rewrapping a `Vec` result in the same
/// variant.
macro_rules! map_any {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            CpuStorage::Bool($v) => CpuStorage::Bool($body),
            CpuStorage::I64($v) => CpuStorage::I64($body),
            CpuStorage::Bf16($v) => CpuStorage::Bf16($body),
            CpuStorage::F16($v) => CpuStorage::F16($body),
            CpuStorage::F32($v) => CpuStorage::F32($body),
            CpuStorage::F64($v) => CpuStorage::F64($body),
            CpuStorage::C64($v) => CpuStorage::C64($body),
            CpuStorage::C128($v) => CpuStorage::C128($body),
        }
    };
}

/// Elements of `v` at the offsets of `l`, in row-major order, in a fresh (uncached)
/// vector: for buffers handed to users.
pub(crate) fn collect_strided<T: Copy + Default + Sync>(v: &[T], l: &Layout) -> Vec<T> {
    if let Some(r) = l.contiguous_range() {
        return v[r].to_vec();
    }
    eval_fresh(l.dims(), [l.strides()], [l.offset()], &MapRow { v, f: |x| x })
}

/// Elements of `v` at the offsets of `l`, in row-major order, mapped through `f`.
pub(crate) fn map_strided<T: Copy + Sync, U: Pooled>(
    v: &[T],
    l: &Layout,
    f: impl Fn(T) -> U + Sync,
) -> Vec<U> {
    map_rows(l, &MapRow { v, f }, false)
}

/// [`map_strided`] on all threads when the input is large and contiguous.
fn map_par<T: Copy + Sync, U: Pooled>(v: &[T], l: &Layout, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    map_rows(l, &MapRow { v, f }, true)
}

/// Where `l`'s elements are one run: `(start, 1)` if contiguous, `(offset, 0)` if one
/// element broadcast everywhere (the cotangent of a sum, a scalar expanded).
fn one_run(l: &Layout) -> Option<(usize, usize)> {
    match l.contiguous_range() {
        Some(rg) => Some((rg.start, 1)),
        None => l.is_scalar_broadcast().then(|| (l.offset(), 0)),
    }
}

/// The pass of a one-operand kernel over `l` (compiled once per output type).
fn map_rows<U: Pooled>(l: &Layout, r: &dyn RowKernel<U, 1>, par: bool) -> Vec<U> {
    if let Some((o, s)) = one_run(l) {
        return eval_row(l.numel(), [o], [s], r, par);
    }
    eval(l.dims(), [l.strides()], [l.offset()], r, false)
}

/// Pairs of elements of `a` and `b` (layouts of one shape), in row-major order, mapped
/// through `f`.
fn zip_strided<T: Copy + Sync, U: Pooled>(
    a: &[T],
    al: &Layout,
    b: &[T],
    bl: &Layout,
    f: impl Fn(T, T) -> U + Sync,
) -> Vec<U> {
    zip_rows(al, bl, &ZipRow { a, b, f }, false)
}

/// [`zip_strided`] on all threads when the inputs are large and each one contiguous or
/// one element broadcast.
fn zip_par<T: Copy + Sync, U: Pooled>(
    a: &[T],
    al: &Layout,
    b: &[T],
    bl: &Layout,
    f: impl Fn(T, T) -> U + Sync,
) -> Vec<U> {
    zip_rows(al, bl, &ZipRow { a, b, f }, true)
}

/// The pass of a two-operand kernel over `al` and `bl` (compiled once per output type).
fn zip_rows<U: Pooled>(al: &Layout, bl: &Layout, r: &dyn RowKernel<U, 2>, par: bool) -> Vec<U> {
    if let (Some((i, s)), Some((j, t))) = (one_run(al), one_run(bl)) {
        return eval_row(al.numel(), [i, j], [s, t], r, par);
    }
    eval(al.dims(), [al.strides(), bl.strides()], [al.offset(), bl.offset()], r, false)
}

/// The elements of `l`, contiguous (a copy).
fn own<T: Pooled>(v: &[T], l: &Layout) -> Vec<T> {
    map_strided(v, l, |x| x)
}

/// `v`'s elements at `l` in row-major order: the slice where it already is one
/// (contiguous), one element where all of them are that one (a broadcast scalar, such as
/// the cotangent of a `sum`), else a copy.
fn in_place<'a, T: Pooled>(v: &'a [T], l: &Layout) -> std::borrow::Cow<'a, [T]> {
    use std::borrow::Cow;
    if let Some(r) = l.contiguous_range() {
        Cow::Borrowed(&v[r])
    } else if l.is_scalar_broadcast() {
        Cow::Borrowed(&v[l.offset()..l.offset() + 1])
    } else {
        Cow::Owned(own(v, l))
    }
}

fn unsupported(op: &'static str, dtype: DType) -> Error {
    Error::UnsupportedDType { op, dtype }
}

/// Adds two elements of a buffer's type (used by accumulating kernels).
trait AddElem: Copy {
    fn add(self, o: Self) -> Self;
}
impl AddElem for bool {
    fn add(self, o: Self) -> Self {
        self || o
    }
}
impl AddElem for i64 {
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
}
impl AddElem for bf16 {
    fn add(self, o: Self) -> Self {
        bf16::from_f32(self.to_f32() + o.to_f32())
    }
}
impl AddElem for f16 {
    fn add(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() + o.to_f32())
    }
}
impl AddElem for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
}
impl AddElem for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
}
impl AddElem for Complex<f32> {
    fn add(self, o: Self) -> Self {
        self + o
    }
}
impl AddElem for Complex<f64> {
    fn add(self, o: Self) -> Self {
        self + o
    }
}

/// Iterates the multi-indices of `dims` in row-major order.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut idx = vec![0usize; dims.len()];
    loop {
        f(&idx);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn offset_of(l: &Layout, idx: &[usize]) -> usize {
    l.offset() + idx.iter().zip(l.strides()).map(|(&i, &s)| i * s).sum::<usize>()
}

/// The dims of a layout split for a reduction over `dims` (size-1 dims dropped): the kept
/// dims and their strides, and the reduced ones.
pub(crate) struct ReduceDims {
    pub(crate) kd: Vec<usize>,
    pub(crate) ks: Vec<usize>,
    pub(crate) rd: Vec<usize>,
    pub(crate) rs: Vec<usize>,
}

impl ReduceDims {
    pub(crate) fn of(l: &Layout, dims: &[usize]) -> ReduceDims {
        let (mut kd, mut ks, mut rd, mut rs) = (vec![], vec![], vec![], vec![]);
        for (i, (&d, &s)) in l.dims().iter().zip(l.strides()).enumerate() {
            if d == 1 {
                continue;
            }
            if dims.contains(&i) {
                rd.push(d);
                rs.push(s);
            } else {
                kd.push(d);
                ks.push(s);
            }
        }
        ReduceDims { kd, ks, rd, rs }
    }
}

/// Reduces `dims` of `l` with `f` from `init`; where the reduced elements of each output
/// are one contiguous run, `run` folds the whole slice at once (so it can vectorise).
fn reduce_generic<T: Copy>(
    v: &[T],
    l: &Layout,
    dims: &[usize],
    init: T,
    f: impl Fn(T, T) -> T,
    run: impl Fn(&[T]) -> T,
) -> Vec<T> {
    let ReduceDims { kd, ks, mut rd, mut rs } = ReduceDims::of(l, dims);
    let n_out: usize = kd.iter().product();
    let mut out = Vec::with_capacity(n_out);
    if n_out == 0 {
        return out;
    }
    // the reduced dims form one contiguous run of `len` elements
    let is_run = |rd: &[usize], rs: &[usize]| {
        let mut expected = 1usize;
        rd.iter().zip(rs).rev().all(|(&d, &s)| {
            let ok = s == expected;
            expected *= d;
            ok
        })
    };
    let mut contiguous = is_run(&rd, &rs);
    if !contiguous && rd.len() > 1 {
        // a permuted dense block (a transposed or column-major matrix): reduce it in
        // memory order
        let mut order: Vec<usize> = (0..rd.len()).collect();
        order.sort_by(|&x, &y| rs[y].cmp(&rs[x]));
        let (sd, ss): (Vec<usize>, Vec<usize>) = order.iter().map(|&k| (rd[k], rs[k])).unzip();
        if is_run(&sd, &ss) {
            (rd, rs, contiguous) = (sd, ss, true);
        }
    }
    let len: usize = rd.iter().product();
    walk(&kd, [&ks], [l.offset()], |[o]| {
        if len == 0 {
            out.push(init);
        } else if contiguous {
            out.push(f(init, run(&v[o..o + len])));
        } else {
            let mut acc = init;
            walk(&rd, [&rs], [o], |[i]| acc = f(acc, v[i]));
            out.push(acc);
        }
    });
    out
}

/// Σ of a slice with 8 independent partial sums (vectorisable, and more accurate than one
/// running sum).
fn sum_run<T: Float>(xs: &[T]) -> T {
    let mut acc = [T::ZERO; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    let mut s = T::ZERO;
    for x in chunks.remainder() {
        s += *x;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + s
}

fn fold_run<T: Copy>(init: T, f: impl Fn(T, T) -> T) -> impl Fn(&[T]) -> T {
    move |xs: &[T]| xs.iter().fold(init, |a, &b| f(a, b))
}

fn reduce_float<T: Float>(v: &[T], l: &Layout, dims: &[usize], op: ReduceOp) -> Vec<T> {
    let max = |a: T, b: T| if b.is_nan() || b > a { b } else { a };
    let min = |a: T, b: T| if b.is_nan() || b < a { b } else { a };
    let mul = |a: T, b: T| a * b;
    match op {
        ReduceOp::Sum => reduce_generic(v, l, dims, T::ZERO, |a, b| a + b, sum_run),
        ReduceOp::Prod => reduce_generic(v, l, dims, T::ONE, mul, fold_run(T::ONE, mul)),
        ReduceOp::Max => reduce_generic(v, l, dims, -T::INFINITY, max, fold_run(-T::INFINITY, max)),
        ReduceOp::Min => reduce_generic(v, l, dims, T::INFINITY, min, fold_run(T::INFINITY, min)),
    }
}

/// Sums and products of complex elements (complex numbers have no order: `max` and
/// `min` are refused, as PyTorch refuses them).
fn reduce_complex<C: ComplexFloat>(
    v: &[C],
    l: &Layout,
    dims: &[usize],
    op: ReduceOp,
) -> Result<Vec<C>> {
    let zero = C::new(C::Real::ZERO, C::Real::ZERO);
    let one = C::new(C::Real::ONE, C::Real::ZERO);
    let add = |a: C, b: C| a + b;
    let mul = |a: C, b: C| a.mul(b);
    Ok(match op {
        ReduceOp::Sum => reduce_generic(v, l, dims, zero, add, fold_run(zero, add)),
        ReduceOp::Prod => reduce_generic(v, l, dims, one, mul, fold_run(one, mul)),
        ReduceOp::Max => return Err(unsupported("max", C::DTYPE)),
        ReduceOp::Min => return Err(unsupported("min", C::DTYPE)),
    })
}

fn to_f32_vec<T: Copy + Sync>(
    v: &[T],
    l: &Layout,
    f: impl Fn(T) -> f32 + Sync,
) -> (Vec<f32>, Layout) {
    (map_strided(v, l, f), Layout::contiguous(l.shape().clone()))
}

/// An extra operand of a fused kernel (`op.0`, whose main operand has dtype `op.1`) as
/// `&[T]`, the main operand's element type; `DTypeMismatch` naming the op otherwise.
fn typed<'a, T: Element>((op, lhs): (&'static str, DType), x: &'a CpuStorage) -> Result<&'a [T]> {
    x.as_slice::<T>().ok_or(Error::DTypeMismatch { op, lhs, rhs: x.dtype() })
}

/// [`typed`] for an optional strided operand.
fn typed_opt<'a, T: Element>(
    op: (&'static str, DType),
    x: Option<(&'a CpuStorage, &'a Layout)>,
) -> Result<Option<(&'a [T], &'a Layout)>> {
    x.map(|(d, l)| Ok((typed(op, d)?, l))).transpose()
}

impl CpuStorage {
    /// The buffer as a slice of `T`, if it has that dtype.
    pub(crate) fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::host_slice(self)
    }

    /// The elements at `l` as `f64` (real parts of complex values).
    pub(crate) fn to_f64_vec(&self, l: &Layout) -> Vec<f64> {
        match self {
            CpuStorage::Bool(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::I64(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::Bf16(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::F16(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::F32(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::F64(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::C64(v) => map_strided(v, l, Element::to_f64),
            CpuStorage::C128(v) => map_strided(v, l, Element::to_f64),
        }
    }

    fn from_f64_vec(v: Vec<f64>, to: DType) -> CpuStorage {
        match to {
            DType::Bool => CpuStorage::Bool(v.into_iter().map(|x| x != 0.0).collect()),
            DType::I64 => CpuStorage::I64(v.into_iter().map(|x| x as i64).collect()),
            DType::Bf16 => CpuStorage::Bf16(v.into_iter().map(bf16::from_f64).collect()),
            DType::F16 => CpuStorage::F16(v.into_iter().map(f16::from_f64).collect()),
            DType::F32 => CpuStorage::F32(v.into_iter().map(|x| x as f32).collect()),
            DType::F64 => CpuStorage::F64(v),
            DType::C64 => {
                CpuStorage::C64(v.into_iter().map(|x| Complex::new(x as f32, 0.0)).collect())
            }
            DType::C128 => CpuStorage::C128(v.into_iter().map(|x| Complex::new(x, 0.0)).collect()),
        }
    }

    /// The elements at `l` as `f32` (for the 16-bit types, which compute in `f32`).
    fn half_to_f32(&self, l: &Layout) -> Option<(Vec<f32>, Layout)> {
        match self {
            CpuStorage::Bf16(v) => Some(to_f32_vec(v, l, bf16::to_f32)),
            CpuStorage::F16(v) => Some(to_f32_vec(v, l, f16::to_f32)),
            _ => None,
        }
    }

    fn f32_to(dtype: DType, v: Vec<f32>) -> CpuStorage {
        match dtype {
            DType::Bf16 => CpuStorage::Bf16(v.into_iter().map(bf16::from_f32).collect()),
            DType::F16 => CpuStorage::F16(v.into_iter().map(f16::from_f32).collect()),
            _ => CpuStorage::F32(v),
        }
    }
}

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        HostBuffer::dtype(self)
    }

    fn from_host(device: Device, h: HostBuffer) -> Result<CpuStorage> {
        debug_assert_eq!(device, Device::Cpu);
        Ok(h)
    }

    fn to_host(&self, l: &Layout) -> Result<HostBuffer> {
        Ok(map_any!(self, v => collect_strided(v, l)))
    }

    fn to_host_f64(&self, l: &Layout) -> Result<Vec<f64>> {
        Ok(self.to_f64_vec(l))
    }

    fn first_nonzero(&self, l: &Layout) -> Result<Option<(usize, i64)>> {
        if let CpuStorage::Bool(v) = self {
            let at = match l.contiguous_range() {
                Some(r) => v[r].iter().position(|&b| b),
                None => collect_strided(v, l).iter().position(|&b| b),
            };
            return Ok(at.map(|k| (k, 1)));
        }
        let CpuStorage::I64(v) = self else {
            return Err(Error::Internal { op: "first_nonzero", reason: "an I64 or Bool buffer" });
        };
        if let Some(r) = l.contiguous_range() {
            // scanned where it lies: the check runs after every batched factorisation
            return Ok(v[r].iter().position(|&i| i != 0).map(|k| (k, v[l.offset() + k])));
        }
        let all = collect_strided(v, l);
        Ok(all.iter().position(|&i| i != 0).map(|k| (k, all[k])))
    }

    fn zeros(device: Device, n: usize, dtype: DType) -> Result<CpuStorage> {
        debug_assert_eq!(device, Device::Cpu);
        Ok(match dtype {
            DType::Bool => CpuStorage::Bool(vec![false; n]),
            DType::I64 => CpuStorage::I64(vec![0; n]),
            DType::Bf16 => CpuStorage::Bf16(vec![bf16::ZERO; n]),
            DType::F16 => CpuStorage::F16(vec![f16::ZERO; n]),
            DType::F32 => CpuStorage::F32(pool::filled(n, 0.0)),
            DType::F64 => CpuStorage::F64(pool::filled(n, 0.0)),
            DType::C64 => CpuStorage::C64(vec![Complex::new(0.0, 0.0); n]),
            DType::C128 => CpuStorage::C128(vec![Complex::new(0.0, 0.0); n]),
        })
    }

    fn copy_strided(&self, l: &Layout) -> Result<CpuStorage> {
        Ok(map_any!(self, v => map_strided(v, l, |x| x)))
    }

    fn cast(&self, l: &Layout, to: DType) -> Result<CpuStorage> {
        let from = self.dtype();
        if from == to {
            return self.copy_strided(l);
        }
        Ok(match (self, to) {
            (CpuStorage::F32(v), DType::Bf16) => {
                CpuStorage::Bf16(map_strided(v, l, bf16::from_f32))
            }
            (CpuStorage::F32(v), DType::F16) => CpuStorage::F16(map_strided(v, l, f16::from_f32)),
            (CpuStorage::Bf16(v), DType::F32) => CpuStorage::F32(map_strided(v, l, bf16::to_f32)),
            (CpuStorage::F16(v), DType::F32) => CpuStorage::F32(map_strided(v, l, f16::to_f32)),
            (CpuStorage::C64(v), DType::C128) => CpuStorage::C128(map_strided(v, l, |z| {
                Complex::new(f64::from(z.re), f64::from(z.im))
            })),
            (CpuStorage::C128(v), DType::C64) => {
                CpuStorage::C64(map_strided(v, l, |z| Complex::new(z.re as f32, z.im as f32)))
            }
            (CpuStorage::C64(v), _) => {
                CpuStorage::from_f64_vec(map_strided(v, l, |z| f64::from(z.re)), to)
            }
            (CpuStorage::C128(v), _) => CpuStorage::from_f64_vec(map_strided(v, l, |z| z.re), to),
            (CpuStorage::I64(v), DType::F64) => CpuStorage::F64(map_strided(v, l, |x| x as f64)),
            _ => CpuStorage::from_f64_vec(self.to_f64_vec(l), to),
        })
    }

    fn unary<K: UnaryKernel>(&self, l: &Layout, k: K) -> Result<CpuStorage> {
        Ok(match self {
            CpuStorage::F32(v) => CpuStorage::F32(map_par(v, l, |x| k.f(x))),
            CpuStorage::F64(v) => CpuStorage::F64(map_par(v, l, |x| k.f(x))),
            CpuStorage::Bf16(_) | CpuStorage::F16(_) => {
                let (x, _) = self
                    .half_to_f32(l)
                    .ok_or(Error::Internal { op: K::NAME, reason: "half conversion" })?;
                CpuStorage::f32_to(self.dtype(), x.into_iter().map(|x| k.f(x)).collect())
            }
            CpuStorage::C64(v) if K::COMPLEX => CpuStorage::C64(map_par(v, l, |z| k.c(z))),
            CpuStorage::C128(v) if K::COMPLEX => CpuStorage::C128(map_par(v, l, |z| k.c(z))),
            _ => return Err(unsupported(K::NAME, self.dtype())),
        })
    }

    fn binary<K: BinaryKernel>(
        &self,
        l: &Layout,
        rhs: &CpuStorage,
        rl: &Layout,
        k: K,
    ) -> Result<CpuStorage> {
        Ok(match (self, rhs) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                CpuStorage::F32(zip_par(a, l, b, rl, |x, y| k.f(x, y)))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                CpuStorage::F64(zip_par(a, l, b, rl, |x, y| k.f(x, y)))
            }
            (CpuStorage::Bf16(_), CpuStorage::Bf16(_))
            | (CpuStorage::F16(_), CpuStorage::F16(_)) => {
                let bad = Error::Internal { op: K::NAME, reason: "half conversion" };
                let (a, al) = self.half_to_f32(l).ok_or(bad.clone())?;
                let (b, bl) = rhs.half_to_f32(rl).ok_or(bad)?;
                CpuStorage::f32_to(self.dtype(), zip_strided(&a, &al, &b, &bl, |x, y| k.f(x, y)))
            }
            (CpuStorage::C64(a), CpuStorage::C64(b)) if K::COMPLEX => {
                CpuStorage::C64(zip_par(a, l, b, rl, |x, y| k.c(x, y)))
            }
            (CpuStorage::C128(a), CpuStorage::C128(b)) if K::COMPLEX => {
                CpuStorage::C128(zip_par(a, l, b, rl, |x, y| k.c(x, y)))
            }
            _ if self.dtype() != rhs.dtype() => {
                return Err(Error::DTypeMismatch {
                    op: K::NAME,
                    lhs: self.dtype(),
                    rhs: rhs.dtype(),
                })
            }
            _ => return Err(unsupported(K::NAME, self.dtype())),
        })
    }

    fn cmp(&self, l: &Layout, rhs: &CpuStorage, rl: &Layout, op: CmpOp) -> Result<CpuStorage> {
        fn go<T: Copy + PartialOrd + Sync>(
            a: &[T],
            al: &Layout,
            b: &[T],
            bl: &Layout,
            op: CmpOp,
        ) -> Vec<bool> {
            match op {
                CmpOp::Eq => zip_strided(a, al, b, bl, |x, y| x == y),
                CmpOp::Ne => zip_strided(a, al, b, bl, |x, y| x != y),
                CmpOp::Lt => zip_strided(a, al, b, bl, |x, y| x < y),
                CmpOp::Le => zip_strided(a, al, b, bl, |x, y| x <= y),
                CmpOp::Gt => zip_strided(a, al, b, bl, |x, y| x > y),
                CmpOp::Ge => zip_strided(a, al, b, bl, |x, y| x >= y),
            }
        }
        Ok(CpuStorage::Bool(match (self, rhs) {
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => go(a, l, b, rl, op),
            (CpuStorage::I64(a), CpuStorage::I64(b)) => go(a, l, b, rl, op),
            (CpuStorage::Bf16(a), CpuStorage::Bf16(b)) => go(a, l, b, rl, op),
            (CpuStorage::F16(a), CpuStorage::F16(b)) => go(a, l, b, rl, op),
            (CpuStorage::F32(a), CpuStorage::F32(b)) => go(a, l, b, rl, op),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => go(a, l, b, rl, op),
            (CpuStorage::C64(a), CpuStorage::C64(b)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                zip_strided(a, l, b, rl, |x, y| (x == y) == (op == CmpOp::Eq))
            }
            (CpuStorage::C128(a), CpuStorage::C128(b)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                zip_strided(a, l, b, rl, |x, y| (x == y) == (op == CmpOp::Eq))
            }
            _ if self.dtype() != rhs.dtype() => {
                return Err(Error::DTypeMismatch {
                    op: "compare",
                    lhs: self.dtype(),
                    rhs: rhs.dtype(),
                })
            }
            _ => return Err(unsupported("compare", self.dtype())),
        }))
    }

    fn where_cond(
        &self,
        l: &Layout,
        t: &CpuStorage,
        tl: &Layout,
        f: &CpuStorage,
        fl: &Layout,
    ) -> Result<CpuStorage> {
        let CpuStorage::Bool(c) = self else {
            return Err(Error::DTypeMismatch { op: "where", lhs: self.dtype(), rhs: DType::Bool });
        };
        fn go<T: Pooled>(
            c: &[bool],
            l: &Layout,
            t: &[T],
            tl: &Layout,
            f: &[T],
            fl: &Layout,
        ) -> Vec<T> {
            eval(
                l.dims(),
                [l.strides(), tl.strides(), fl.strides()],
                [l.offset(), tl.offset(), fl.offset()],
                &WhereRow { c, t, f },
                false,
            )
        }
        Ok(match (t, f) {
            (CpuStorage::Bool(a), CpuStorage::Bool(b)) => CpuStorage::Bool(go(c, l, a, tl, b, fl)),
            (CpuStorage::I64(a), CpuStorage::I64(b)) => CpuStorage::I64(go(c, l, a, tl, b, fl)),
            (CpuStorage::Bf16(a), CpuStorage::Bf16(b)) => CpuStorage::Bf16(go(c, l, a, tl, b, fl)),
            (CpuStorage::F16(a), CpuStorage::F16(b)) => CpuStorage::F16(go(c, l, a, tl, b, fl)),
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(go(c, l, a, tl, b, fl)),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(go(c, l, a, tl, b, fl)),
            (CpuStorage::C64(a), CpuStorage::C64(b)) => CpuStorage::C64(go(c, l, a, tl, b, fl)),
            (CpuStorage::C128(a), CpuStorage::C128(b)) => CpuStorage::C128(go(c, l, a, tl, b, fl)),
            _ => return Err(Error::DTypeMismatch { op: "where", lhs: t.dtype(), rhs: f.dtype() }),
        })
    }

    fn reduce(&self, l: &Layout, dims: &[usize], op: ReduceOp) -> Result<CpuStorage> {
        Ok(match self {
            CpuStorage::F32(v) => CpuStorage::F32(reduce_float(v, l, dims, op)),
            CpuStorage::F64(v) => CpuStorage::F64(reduce_float(v, l, dims, op)),
            CpuStorage::Bf16(_) | CpuStorage::F16(_) => {
                let (x, xl) = self
                    .half_to_f32(l)
                    .ok_or(Error::Internal { op: "reduce", reason: "half conversion" })?;
                CpuStorage::f32_to(self.dtype(), reduce_float(&x, &xl, dims, op))
            }
            CpuStorage::I64(v) => CpuStorage::I64(match op {
                ReduceOp::Sum => {
                    reduce_generic(v, l, dims, 0, i64::wrapping_add, fold_run(0, i64::wrapping_add))
                }
                ReduceOp::Prod => {
                    reduce_generic(v, l, dims, 1, i64::wrapping_mul, fold_run(1, i64::wrapping_mul))
                }
                ReduceOp::Max => {
                    reduce_generic(v, l, dims, i64::MIN, i64::max, fold_run(i64::MIN, i64::max))
                }
                ReduceOp::Min => {
                    reduce_generic(v, l, dims, i64::MAX, i64::min, fold_run(i64::MAX, i64::min))
                }
            }),
            CpuStorage::Bool(v) => CpuStorage::Bool(match op {
                ReduceOp::Sum | ReduceOp::Max => {
                    reduce_generic(v, l, dims, false, |a, b| a || b, |xs| xs.contains(&true))
                }
                ReduceOp::Prod | ReduceOp::Min => {
                    reduce_generic(v, l, dims, true, |a, b| a && b, |xs| !xs.contains(&false))
                }
            }),
            CpuStorage::C64(v) => CpuStorage::C64(reduce_complex(v, l, dims, op)?),
            CpuStorage::C128(v) => CpuStorage::C128(reduce_complex(v, l, dims, op)?),
        })
    }

    fn complex_part(&self, l: &Layout, part: ComplexPart) -> Result<CpuStorage> {
        fn go<C: ComplexFloat>(v: &[C], l: &Layout, part: ComplexPart) -> Vec<C::Real>
        where
            C::Real: Pooled,
        {
            match part {
                ComplexPart::Re => map_par(v, l, C::re),
                ComplexPart::Im => map_par(v, l, C::im),
                ComplexPart::Abs => map_par(v, l, C::abs),
                ComplexPart::Angle => map_par(v, l, C::arg),
            }
        }
        // the argument of a real number: π below zero, else 0 (NaN kept)
        fn arg<T: Float>(x: T) -> T {
            if x < T::ZERO {
                T::of(std::f64::consts::PI)
            } else if x.is_nan() {
                x
            } else {
                T::ZERO
            }
        }
        Ok(match self {
            CpuStorage::C64(v) => CpuStorage::F32(go(v, l, part)),
            CpuStorage::C128(v) => CpuStorage::F64(go(v, l, part)),
            CpuStorage::F32(v) if part == ComplexPart::Angle => CpuStorage::F32(map_par(v, l, arg)),
            CpuStorage::F64(v) if part == ComplexPart::Angle => CpuStorage::F64(map_par(v, l, arg)),
            _ => return Err(unsupported("real", self.dtype())),
        })
    }

    fn complex(&self, l: &Layout, im: &CpuStorage, il: &Layout) -> Result<CpuStorage> {
        Ok(match (self, im) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                CpuStorage::C64(zip_par(a, l, b, il, Complex::new))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                CpuStorage::C128(zip_par(a, l, b, il, Complex::new))
            }
            _ => {
                return Err(Error::DTypeMismatch {
                    op: "complex",
                    lhs: self.dtype(),
                    rhs: im.dtype(),
                })
            }
        })
    }

    fn scatter_strided(
        &self,
        src: &Layout,
        numel: usize,
        dst: &Layout,
        accumulate: bool,
    ) -> Result<CpuStorage> {
        fn go<T: AddElem + Default + Pooled>(
            v: &[T],
            src: &Layout,
            numel: usize,
            dst: &Layout,
            acc: bool,
        ) -> Vec<T> {
            let mut out = pool::filled(numel, T::default());
            walk(
                src.dims(),
                [src.strides(), dst.strides()],
                [src.offset(), dst.offset()],
                |[i, j]| {
                    out[j] = if acc { out[j].add(v[i]) } else { v[i] };
                },
            );
            out
        }
        if dst.storage_extent() > numel || src.dims() != dst.dims() {
            return Err(Error::Internal { op: "scatter_strided", reason: "layout outside buffer" });
        }
        Ok(map_any!(self, v => go(v, src, numel, dst, accumulate)))
    }

    fn cat(parts: &[(&CpuStorage, &Layout)], dim: usize, out: &Shape) -> Result<CpuStorage> {
        let Some((first, _)) = parts.first() else {
            return Err(Error::Internal { op: "cat", reason: "no parts" });
        };
        let dtype = first.dtype();
        let outl = Layout::contiguous(out.clone());
        let mut buf = CpuStorage::zeros(Device::Cpu, out.numel(), dtype)?;
        let mut start = 0;
        for (s, l) in parts {
            if s.dtype() != dtype {
                return Err(Error::DTypeMismatch { op: "cat", lhs: dtype, rhs: s.dtype() });
            }
            let len = l.dims().get(dim).copied().unwrap_or(0);
            let dst = outl.slice(dim, start, len, 1);
            start += len;
            fn put<T: Copy>(o: &mut [T], v: &[T], l: &Layout, dst: &Layout) {
                walk(
                    l.dims(),
                    [l.strides(), dst.strides()],
                    [l.offset(), dst.offset()],
                    |[i, j]| {
                        o[j] = v[i];
                    },
                );
            }
            match (&mut buf, s) {
                (CpuStorage::Bool(o), CpuStorage::Bool(v)) => put(o, v, l, &dst),
                (CpuStorage::I64(o), CpuStorage::I64(v)) => put(o, v, l, &dst),
                (CpuStorage::Bf16(o), CpuStorage::Bf16(v)) => put(o, v, l, &dst),
                (CpuStorage::F16(o), CpuStorage::F16(v)) => put(o, v, l, &dst),
                (CpuStorage::F32(o), CpuStorage::F32(v)) => put(o, v, l, &dst),
                (CpuStorage::F64(o), CpuStorage::F64(v)) => put(o, v, l, &dst),
                (CpuStorage::C64(o), CpuStorage::C64(v)) => put(o, v, l, &dst),
                (CpuStorage::C128(o), CpuStorage::C128(v)) => put(o, v, l, &dst),
                _ => return Err(Error::Internal { op: "cat", reason: "dtype" }),
            }
        }
        Ok(buf)
    }

    fn permutation(&self, l: &Layout, m: usize, op: &'static str) -> Result<CpuStorage> {
        let CpuStorage::I64(v) = self else { return Err(unsupported(op, self.dtype())) };
        let piv = in_place(v, l);
        let k = l.dims().last().copied().unwrap_or(0);
        let count: usize = l.dims()[..l.rank().saturating_sub(1)].iter().product();
        let mut out: Vec<i64> = Vec::with_capacity(count * m);
        for b in 0..count {
            let start = out.len();
            out.extend(0..m as i64);
            for (j, &p) in piv[b * k..(b + 1) * k].iter().enumerate() {
                if p < 1 || p as usize > m {
                    return Err(Error::InvalidArgument {
                        op,
                        arg: "pivots",
                        reason: "pivots must be 1-based row indices in 1..=m",
                    });
                }
                out.swap(start + j, start + p as usize - 1);
            }
        }
        Ok(CpuStorage::I64(out))
    }

    fn flip(&self, l: &Layout, dims: &[usize]) -> Result<CpuStorage> {
        fn go<T: Copy>(v: &[T], l: &Layout, flip: &[usize]) -> Vec<T> {
            let mut out = Vec::with_capacity(l.numel());
            let d = l.dims();
            for_each_index(d, |idx| {
                let mut o = l.offset();
                for (k, (&i, &s)) in idx.iter().zip(l.strides()).enumerate() {
                    o += if flip.contains(&k) { (d[k] - 1 - i) * s } else { i * s };
                }
                out.push(v[o]);
            });
            out
        }
        Ok(map_any!(self, v => go(v, l, dims)))
    }

    fn gather(
        &self,
        l: &Layout,
        dim: usize,
        index: &CpuStorage,
        il: &Layout,
    ) -> Result<CpuStorage> {
        let CpuStorage::I64(ix) = index else {
            return Err(Error::DTypeMismatch { op: "gather", lhs: index.dtype(), rhs: DType::I64 });
        };
        let size = l.dims()[dim];
        let mut bad = None;
        fn go<T: Copy + Default>(
            v: &[T],
            l: &Layout,
            dim: usize,
            ix: &[i64],
            il: &Layout,
            size: usize,
            bad: &mut Option<i64>,
        ) -> Vec<T> {
            let mut out = Vec::with_capacity(il.numel());
            let mut pos = vec![0usize; il.rank()];
            for_each_index(il.dims(), |idx| {
                let k = ix[offset_of(il, idx)];
                if k < 0 || k as usize >= size {
                    *bad = Some(k);
                    out.push(T::default());
                    return;
                }
                pos.copy_from_slice(idx);
                pos[dim] = k as usize;
                out.push(v[offset_of(l, &pos)]);
            });
            out
        }
        let out = map_any!(self, v => go(v, l, dim, ix, il, size, &mut bad));
        match bad {
            Some(index) => Err(Error::IndexOutOfRange { op: "gather", index, size }),
            None => Ok(out),
        }
    }

    fn scatter_add(
        &self,
        l: &Layout,
        dim: usize,
        index: &CpuStorage,
        il: &Layout,
        src: &CpuStorage,
        sl: &Layout,
    ) -> Result<CpuStorage> {
        let CpuStorage::I64(ix) = index else {
            return Err(Error::DTypeMismatch {
                op: "scatter_add",
                lhs: index.dtype(),
                rhs: DType::I64,
            });
        };
        let size = l.dims()[dim];
        let outl = Layout::contiguous(l.shape().clone());
        let mut bad = None;
        fn go<T: AddElem>(
            o: &mut [T],
            outl: &Layout,
            dim: usize,
            ix: &[i64],
            il: &Layout,
            s: &[T],
            sl: &Layout,
            size: usize,
            bad: &mut Option<i64>,
        ) {
            let mut pos = vec![0usize; il.rank()];
            for_each_index(il.dims(), |idx| {
                let k = ix[offset_of(il, idx)];
                if k < 0 || k as usize >= size {
                    *bad = Some(k);
                    return;
                }
                pos.copy_from_slice(idx);
                pos[dim] = k as usize;
                let j = offset_of(outl, &pos);
                o[j] = o[j].add(s[offset_of(sl, idx)]);
            });
        }
        let mut out = self.copy_strided(l)?;
        match (&mut out, src) {
            (CpuStorage::Bool(o), CpuStorage::Bool(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::I64(o), CpuStorage::I64(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::Bf16(o), CpuStorage::Bf16(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::F16(o), CpuStorage::F16(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::F32(o), CpuStorage::F32(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::F64(o), CpuStorage::F64(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::C64(o), CpuStorage::C64(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            (CpuStorage::C128(o), CpuStorage::C128(s)) => {
                go(o, &outl, dim, ix, il, s, sl, size, &mut bad);
            }
            _ => {
                return Err(Error::DTypeMismatch {
                    op: "scatter_add",
                    lhs: self.dtype(),
                    rhs: src.dtype(),
                })
            }
        }
        match bad {
            Some(index) => Err(Error::IndexOutOfRange { op: "scatter_add", index, size }),
            None => Ok(out),
        }
    }

    fn vector_norm(&self, l: &Layout, dims: &[usize], ord: f64) -> Result<CpuStorage> {
        Ok(real!("linalg.vector_norm", self, [], |v: T| {
            T::into_host(norm::vector_norm(v, l, dims, ord))
        }))
    }

    fn matmul(&self, l: &Layout, rhs: &CpuStorage, rl: &Layout) -> Result<CpuStorage> {
        let op = ("matmul", self.dtype());
        match (self, rhs) {
            (CpuStorage::C64(a), CpuStorage::C64(b)) => {
                return Ok(CpuStorage::C64(matmul::matmul_complex(
                    a,
                    l,
                    b,
                    rl,
                    Complex::new(1.0, 0.0),
                )))
            }
            (CpuStorage::C128(a), CpuStorage::C128(b)) => {
                return Ok(CpuStorage::C128(matmul::matmul_complex(
                    a,
                    l,
                    b,
                    rl,
                    Complex::new(1.0, 0.0),
                )))
            }
            _ => {}
        }
        Ok(real!(op.0, self, [rhs], |a: T| {
            T::into_host(matmul::matmul(a, l, typed::<T>(op, rhs)?, rl))
        }))
    }

    fn solve_triangular(
        &self,
        l: &Layout,
        b: &CpuStorage,
        bl: &Layout,
        spec: TriSolve,
    ) -> Result<(CpuStorage, Layout)> {
        let op = ("linalg.solve_triangular", self.dtype());
        complex!(self, |a: T| {
            let (x, xl) = linalg::complex::solve_triangular(a, l, typed::<T>(op, b)?, bl, spec);
            (T::into_host(x), xl)
        });
        Ok(real!(op.0, self, [b], |a: T| {
            let b = typed::<T>(op, b)?;
            let (x, xl) = linalg::triangular::solve_triangular(a, l, b, bl, spec);
            (T::into_host(x), xl)
        }))
    }

    fn cholesky(&self, l: &Layout, upper: bool) -> Result<(CpuStorage, Layout, CpuStorage)> {
        complex!(self, |a: T| {
            let (f, fl, info) = linalg::complex::cholesky(a, l, upper);
            (T::into_host(f), fl, CpuStorage::I64(info))
        });
        Ok(real!("linalg.cholesky", self, [], |a: T| {
            let (f, fl, info) = linalg::cholesky::cholesky(a, l, upper);
            (T::into_host(f), fl, CpuStorage::I64(info))
        }))
    }

    fn lu_factor(
        &self,
        l: &Layout,
        pivot: bool,
    ) -> Result<(CpuStorage, Layout, CpuStorage, CpuStorage)> {
        complex!(self, |a: T| {
            let (lu, ll, p, i) = linalg::complex::lu::lu_factor(a, l, pivot);
            (T::into_host(lu), ll, CpuStorage::I64(p), CpuStorage::I64(i))
        });
        Ok(real!("linalg.lu_factor", self, [], |a: T| {
            let (lu, ll, p, i) = if pivot {
                linalg::lu::lu_factor(a, l)
            } else {
                linalg::lu::lu_factor_nopivot(a, l)
            };
            (T::into_host(lu), ll, CpuStorage::I64(p), CpuStorage::I64(i))
        }))
    }

    fn ldl_factor(
        &self,
        l: &Layout,
        hermitian: bool,
    ) -> Result<(CpuStorage, Layout, CpuStorage, CpuStorage)> {
        complex!(self, |a: T| {
            let (f, fl, p, i) = linalg::complex::ldl::ldl_factor(a, l, hermitian);
            (T::into_host(f), fl, CpuStorage::I64(p), CpuStorage::I64(i))
        });
        // (symmetric and Hermitian are one factorisation for real input)
        Ok(real!("linalg.ldl_factor", self, [], |a: T| {
            let (f, fl, p, i) = linalg::ldl::ldl_factor(a, l);
            (T::into_host(f), fl, CpuStorage::I64(p), CpuStorage::I64(i))
        }))
    }

    fn ldl_solve(
        &self,
        l: &Layout,
        piv: &CpuStorage,
        b: &CpuStorage,
        bl: &Layout,
        hermitian: bool,
    ) -> Result<(CpuStorage, Layout)> {
        let op = ("linalg.ldl_solve", self.dtype());
        let CpuStorage::I64(p) = piv else { return Err(unsupported(op.0, piv.dtype())) };
        complex!(self, |f: T| {
            let b = typed::<T>(op, b)?;
            let (x, xl) = linalg::complex::ldl::ldl_solve(f, l, p, b, bl, hermitian);
            (T::into_host(x), xl)
        });
        Ok(real!(op.0, self, [b], |f: T| {
            let (x, xl) = linalg::ldl::ldl_solve(f, l, p, typed::<T>(op, b)?, bl);
            (T::into_host(x), xl)
        }))
    }

    fn lu_det(&self, l: &Layout, want_log: bool) -> Result<crate::backend::LuDet<CpuStorage>> {
        complex!(self, |a: T| {
            let d = linalg::complex::lu::lu_det(a, l, want_log);
            crate::backend::LuDet {
                lu: T::into_host(d.lu),
                layout: d.layout,
                piv: CpuStorage::I64(d.piv),
                info: CpuStorage::I64(d.info),
                det: T::into_host(d.det),
                sign: T::into_host(d.sign),
                logabs: Element::into_host(d.logabs),
                loose: CpuStorage::Bool(d.loose),
            }
        });
        Ok(real!("linalg.det", self, [], |a: T| {
            linalg::lu::lu_det(a, l, want_log).map(T::into_host)
        }))
    }

    fn lu_solve(
        &self,
        l: &Layout,
        piv: &CpuStorage,
        b: &CpuStorage,
        bl: &Layout,
        adjoint: bool,
    ) -> Result<(CpuStorage, Layout)> {
        let op = ("linalg.lu_solve", self.dtype());
        let CpuStorage::I64(p) = piv else { return Err(unsupported(op.0, piv.dtype())) };
        complex!(self, |a: T| {
            let b = typed::<T>(op, b)?;
            let (x, xl) = linalg::complex::lu::lu_solve(a, l, p, b, bl, adjoint);
            (T::into_host(x), xl)
        });
        Ok(real!(op.0, self, [b], |a: T| {
            let (x, xl) = linalg::lu::lu_solve(a, l, p, typed::<T>(op, b)?, bl, adjoint);
            (T::into_host(x), xl)
        }))
    }

    fn qr(
        &self,
        l: &Layout,
        spec: QrSpec,
    ) -> Result<(Option<(CpuStorage, Layout)>, CpuStorage, Layout)> {
        complex!(self, |a: T| {
            let (q, (r, rl)) = linalg::complex::qr::qr(a, l, spec);
            (q.map(|(q, ql)| (T::into_host(q), ql)), T::into_host(r), rl)
        });
        Ok(real!("linalg.qr", self, [], |a: T| {
            let (q, (r, rl)) = linalg::qr::qr(a, l, spec);
            (q.map(|(q, ql)| (T::into_host(q), ql)), T::into_host(r), rl)
        }))
    }

    fn svd(
        &self,
        l: &Layout,
        want_uv: bool,
        full: bool,
    ) -> Result<(Option<(CpuStorage, Layout)>, (CpuStorage, Layout), Option<(CpuStorage, Layout)>)>
    {
        let fail = |batch| Error::NoConvergence { op: "linalg.svd", batch };
        complex!(self, |a: T| {
            let (u, s, vh) = linalg::complex::svd::svd(a, l, want_uv, full).map_err(fail)?;
            (
                u.map(|(d, dl)| (T::into_host(d), dl)),
                (Element::into_host(s.0), s.1),
                vh.map(|(d, dl)| (T::into_host(d), dl)),
            )
        });
        Ok(real!("linalg.svd", self, [], |a: T| {
            let r = linalg::svd::svd(a, l, want_uv, full).map_err(fail)?;
            (
                r.u.map(|(d, dl)| (T::into_host(d), dl)),
                (T::into_host(r.s.0), r.s.1),
                r.vh.map(|(d, dl)| (T::into_host(d), dl)),
            )
        }))
    }

    fn eigh(
        &self,
        l: &Layout,
        upper: bool,
        vectors: bool,
    ) -> Result<(CpuStorage, Option<(CpuStorage, Layout)>, Option<usize>)> {
        complex!(self, |a: T| {
            let (w, v, f) = linalg::complex::eigh::eigh(a, l, upper, vectors);
            (Element::into_host(w), v.map(|(v, vl)| (T::into_host(v), vl)), f)
        });
        Ok(real!("linalg.eigh", self, [], |a: T| {
            let (w, v, f) = linalg::eigh::eigh(a, l, upper, vectors);
            (T::into_host(w), v.map(|(v, vl)| (T::into_host(v), vl)), f)
        }))
    }

    fn eig(
        &self,
        l: &Layout,
        vectors: bool,
    ) -> Result<(CpuStorage, Option<(CpuStorage, Layout)>, Option<usize>)> {
        use linalg::complex::eig::{eig, EigOut};
        let wrap = |(w, v, f): EigOut<f64>| {
            (CpuStorage::C128(w), v.map(|(v, vl)| (CpuStorage::C128(v), vl)), f)
        };
        let wrap32 = |(w, v, f): EigOut<f32>| {
            (CpuStorage::C64(w), v.map(|(v, vl)| (CpuStorage::C64(v), vl)), f)
        };
        Ok(match self {
            CpuStorage::F64(a) => wrap(eig(a, l, vectors, true, |x: f64| Complex::new(x, 0.0))),
            CpuStorage::C128(a) => wrap(eig(a, l, vectors, false, |z: Complex<f64>| z)),
            CpuStorage::F32(a) => wrap32(eig(a, l, vectors, true, |x: f32| Complex::new(x, 0.0))),
            CpuStorage::C64(a) => wrap32(eig(a, l, vectors, false, |z: Complex<f32>| z)),
            other => return Err(unsupported("linalg.eig", other.dtype())),
        })
    }

    fn matrix_exp(&self, l: &Layout) -> Result<(CpuStorage, Layout)> {
        complex!(self, |a: T| {
            let (x, xl) = linalg::complex::expm::matrix_exp(a, l);
            (T::into_host(x), xl)
        });
        Ok(real!("linalg.matrix_exp", self, [], |a: T| {
            let (x, xl) = linalg::matrix_exp::matrix_exp(a, l);
            (T::into_host(x), xl)
        }))
    }
}
