//! The vector-norm reduction (`linalg.vector_norm`'s forward): `(Σ |x|^p)^(1/p)` over a set
//! of dims of a strided layout, for every order (`2`, `1`, `±inf`, `0`, any other `p`).
//!
//! The sums are plain multiply-adds in eight independent lanes (vectorisable, and as fast
//! on values below 1 as above: faer's `norm_l2` keeps a scaled accumulator that goes
//! subnormal there and runs far slower). Only when that fast sum overflows, or is so
//! small that subnormal squares lost digits, is the norm recomputed scaled by the largest
//! (smallest, for `p < 0`) magnitude: so `[1e200, 1e200]` has the norm `1.41e200` (PyTorch
//! returns `inf`) and `[1e-200, 1e-200]` has `1.41e-200` (PyTorch: 0).

use rayon::prelude::*;

use super::strided::walk;
use crate::dtype::Float;
use crate::layout::Layout;

/// The floats the kernel runs on (`f32`, `f64`; the 16-bit types are computed in `f32`
/// above the seam).
pub(crate) trait NormFloat: Float + Send + Sync + super::pool::Pooled {
    /// The smallest positive normal value.
    const MIN_NORMAL: Self;

    /// [`norm2_groups`] of the runs of `len` elements tiling `xs` (`out.len()` of them, a
    /// multiple of 8) by the AVX-512 kernel of `norm_wide`, where the element type
    /// (`f64`) and the CPU allow it: the same sums; each run whose sum is out of range
    /// has the sum in `out` and its index pushed on `redo`, for [`finish`]. `false`,
    /// having written nothing, where it does not apply.
    fn norm2_runs_wide(
        _xs: &[Self],
        _len: usize,
        _out: &mut [Self],
        _redo: &mut Vec<usize>,
    ) -> bool {
        false
    }

    /// `out = x s` over the runs of `len` elements tiling `xs`, one scale per run, by the
    /// AVX-512 kernel of `norm_wide` where the element type and the CPU allow it.
    /// `false`, having written nothing, where it does not apply.
    fn scale_runs_wide(_xs: &[Self], _len: usize, _scale: &[Self], _out: &mut [Self]) -> bool {
        false
    }
}
impl NormFloat for f32 {
    const MIN_NORMAL: f32 = f32::MIN_POSITIVE;
}
impl NormFloat for f64 {
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;

    #[cfg(target_arch = "x86_64")]
    fn norm2_runs_wide(xs: &[f64], len: usize, out: &mut [f64], redo: &mut Vec<usize>) -> bool {
        super::norm_wide::norm2_runs(xs, len, out, redo)
    }

    #[cfg(target_arch = "x86_64")]
    fn scale_runs_wide(xs: &[f64], len: usize, scale: &[f64], out: &mut [f64]) -> bool {
        super::norm_wide::scale_runs(xs, len, scale, out)
    }
}

/// Elements from which the reduction (and its backward) runs on all of rayon's threads.
const PAR_ELEMS: usize = 1 << 17;

/// The `ord`-norm over `dims` (resolved, distinct) of the elements of `l`, one value per
/// kept index in row-major order (the keepdim shape). An empty reduction gives 0 (the
/// caller refuses the orders without an identity).
pub(crate) fn vector_norm<T: NormFloat>(v: &[T], l: &Layout, dims: &[usize], ord: f64) -> Vec<T> {
    let super::ReduceDims { kd, ks, rd, rs } = super::ReduceDims::of(l, dims);
    let n_out: usize = kd.iter().product();
    if n_out == 0 {
        return Vec::new();
    }
    let len: usize = rd.iter().product();
    if len == 0 {
        return vec![T::ZERO; n_out];
    }
    // the reduced elements of one output form one run of `len` contiguous elements, in
    // some order (a norm does not depend on it): sort the reduced dims by stride
    let mut order: Vec<usize> = (0..rd.len()).collect();
    order.sort_by(|&x, &y| rs[y].cmp(&rs[x]));
    let (sd, ss): (Vec<usize>, Vec<usize>) = order.iter().map(|&k| (rd[k], rs[k])).unzip();
    let mut expected = 1usize;
    let contiguous = sd.iter().zip(&ss).rev().all(|(&d, &s)| {
        let ok = s == expected;
        expected *= d;
        ok
    });
    // the hot orders get their own run kernel (inlined in the loops below, no per-run
    // dispatch on the order)
    if ord == 2.0 {
        runs(v, l.offset(), &kd, &ks, (&sd, &ss), contiguous, len, ord, norm2_slice)
    } else if ord == 1.0 {
        runs(v, l.offset(), &kd, &ks, (&sd, &ss), contiguous, len, ord, |xs| lanes(xs, Float::abs))
    } else {
        runs(v, l.offset(), &kd, &ks, (&sd, &ss), contiguous, len, ord, |xs| norm_slice(xs, ord))
    }
}

/// `norm` of the run of every kept index (`kd`, `ks` from `offset`): a contiguous run of
/// `len` elements (`contiguous`) or the elements of the reduced dims `(sd, ss)`.
#[inline(always)]
fn runs<T: NormFloat>(
    v: &[T],
    offset: usize,
    kd: &[usize],
    ks: &[usize],
    (sd, ss): (&[usize], &[usize]),
    contiguous: bool,
    len: usize,
    ord: f64,
    norm: impl Fn(&[T]) -> T + Sync,
) -> Vec<T> {
    let n_out: usize = kd.iter().product();
    let threads = rayon::current_num_threads();
    // the runs tile a contiguous block (a contiguous input reduced over its trailing dims):
    // no offsets to list
    let tiled = contiguous && (kd.is_empty() || ks.last() == Some(&len)) && {
        let mut expected = len;
        kd.iter().zip(ks).rev().all(|(&d, &s)| {
            let ok = s == expected;
            expected *= d;
            ok
        })
    };
    if tiled && n_out > 1 {
        let xs = &v[offset..offset + n_out * len];
        // every element is written below
        let mut out = super::pool::overwritten(n_out, T::ZERO);
        let per = runs_per_task(n_out, len);
        if per < n_out {
            super::par::for_each_chunk(&mut out, per, |t, out| {
                let xs = &xs[t * per * len..][..out.len() * len];
                crate::backend::cpu::simd::arch().dispatch(TiledRuns {
                    xs,
                    len,
                    ord,
                    out,
                    norm: &norm,
                });
            });
        } else {
            crate::backend::cpu::simd::arch().dispatch(TiledRuns {
                xs,
                len,
                ord,
                out: &mut out,
                norm: &norm,
            });
        }
        return out;
    }
    let mut starts = Vec::with_capacity(n_out);
    walk(kd, [ks], [offset], |[o]| starts.push(o));
    let one = |o: usize, buf: &mut Vec<T>| -> T {
        if contiguous {
            norm(&v[o..o + len])
        } else {
            buf.clear();
            walk(sd, [ss], [o], |[i]| buf.push(v[i]));
            norm(buf)
        }
    };
    if n_out > 1 && n_out * len >= PAR_ELEMS && threads > 1 {
        let min_len = (PAR_ELEMS / 4 / len).max(1);
        starts.par_iter().with_min_len(min_len).map_init(Vec::new, |buf, &o| one(o, buf)).collect()
    } else if n_out == 1 && contiguous && len >= 2 * PAR_ELEMS {
        // in chunks whatever the thread count, so that the bits do not depend on it
        vec![norm_slice_par(&v[starts[0]..starts[0] + len], ord)]
    } else {
        let mut buf = Vec::new();
        starts.iter().map(|&o| one(o, &mut buf)).collect()
    }
}

/// The norms of the consecutive runs of `len` elements that tile `xs`, written to `out`,
/// compiled for the machine's SIMD level (Rust never contracts `a * b + c` into a fused
/// multiply-add, so the bits are those of the baseline build). Order 2 on runs of a
/// multiple of 8 elements goes four runs at a time ([`norm2_groups`]).
struct TiledRuns<'a, T, F> {
    xs: &'a [T],
    len: usize,
    ord: f64,
    out: &'a mut [T],
    norm: &'a F,
}

/// Elements from which the runs that tile a contiguous block (a norm over the trailing
/// dims of a contiguous tensor, and its backward) are split across rayon's threads: one
/// task per thread, each with the same runs forward and backward, so that each thread's
/// part of the block stays in its core's cache between the two passes. (The norm of a run
/// does not depend on the split.)
///
/// On 2 threads a 1024 x 16 x 16 block is faster split. A 4096 x 4 x 4 block (2^16
/// elements, 512 KiB in f64) was faster on one while the second thread had to be woken
/// for each pass; with `run_tasks`' helper kept awake it is faster split, forward and
/// fwd+bwd.
const PAR_TILED: usize = 1 << 15;

/// Runs per task for `n_out` runs of `len` elements tiling a block: all of them (one task)
/// below [`PAR_TILED`] elements or on one thread, else an equal share per thread, a
/// multiple of 4 runs.
fn runs_per_task(n_out: usize, len: usize) -> usize {
    let threads = rayon::current_num_threads();
    if n_out * len < PAR_TILED || threads < 2 {
        return n_out;
    }
    n_out.div_ceil(threads).next_multiple_of(4)
}

impl<T: NormFloat, F: Fn(&[T]) -> T> pulp::WithSimd for TiledRuns<'_, T, F> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let TiledRuns { xs, len, ord, out, norm } = self;
        if ord == 2.0 && len % 8 == 0 {
            // whole groups of eight runs by the wide kernel where it applies (the same
            // sums), the out-of-range ones finished here
            let whole = out.len() / 8 * 8;
            let mut redo = Vec::new();
            let done = if T::norm2_runs_wide(&xs[..whole * len], len, &mut out[..whole], &mut redo)
            {
                whole
            } else {
                0
            };
            for i in redo {
                out[i] = finish(&xs[i * len..(i + 1) * len], out[i], 2.0);
            }
            let (xs, out) = (&xs[done * len..], &mut out[done..]);
            if len == 16 {
                // 4 x 4 matrices: the run length a constant (the loops unroll)
                norm2_groups(xs, 16, out);
            } else {
                norm2_groups(xs, len, out);
            }
        } else {
            for (o, run) in out.iter_mut().zip(xs.chunks_exact(len)) {
                *o = norm(run);
            }
        }
    }
}

/// [`norm2_slice`] of every run of `len` (a multiple of 8) elements tiling `xs`, four runs
/// at a time: the same sums in the same order (so the same bits), with the range check
/// and the square roots of four runs together.
#[inline(always)]
fn norm2_groups<T: NormFloat>(xs: &[T], len: usize, out: &mut [T]) {
    let tiny = T::MIN_NORMAL / T::EPSILON;
    let mut groups = xs.chunks_exact(4 * len);
    let mut outs = out.chunks_exact_mut(4);
    for (g, o) in (&mut groups).zip(&mut outs) {
        let mut s = [T::ZERO; 4];
        for (r, run) in g.chunks_exact(len).enumerate() {
            let mut acc = [T::ZERO; 8];
            for c in run.chunks_exact(8) {
                for k in 0..8 {
                    acc[k] += c[k] * c[k];
                }
            }
            // lanes()'s tree (its remainder term is 0 here, and s + 0 = s for s >= 0)
            s[r] =
                ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        }
        if s.iter().all(|&s| s.is_finite() && s >= tiny) {
            o.copy_from_slice(&s.map(Float::sqrt));
        } else {
            for ((o, run), &s) in o.iter_mut().zip(g.chunks_exact(len)).zip(&s) {
                *o = if s.is_finite() && s >= tiny { s.sqrt() } else { finish(run, s, 2.0) };
            }
        }
    }
    for (o, run) in outs.into_remainder().iter_mut().zip(groups.remainder().chunks_exact(len)) {
        *o = norm2_slice(run);
    }
}

/// [`norm_slice`] of order 2, inlined: the fast sum, and [`finish`] only when it is out
/// of range.
#[inline(always)]
fn norm2_slice<T: NormFloat>(xs: &[T]) -> T {
    let s = lanes(xs, |x| x * x);
    if s.is_finite() && s >= T::MIN_NORMAL / T::EPSILON {
        s.sqrt()
    } else {
        finish(xs, s, 2.0)
    }
}

/// `Σ f(x)` of a slice in eight independent lanes.
#[inline(always)]
fn lanes<T: Float>(xs: &[T], f: impl Fn(T) -> T) -> T {
    let mut acc = [T::ZERO; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] += f(c[k]);
        }
    }
    let mut s = T::ZERO;
    for &x in chunks.remainder() {
        s += f(x);
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + s
}

/// The largest (`max`) or smallest magnitude; NaN if any element is NaN.
fn extreme<T: Float>(xs: &[T], max: bool) -> T {
    let mut m = if max { T::ZERO } else { T::INFINITY };
    for &x in xs {
        let a = x.abs();
        if a.is_nan() {
            return a;
        }
        if (max && a > m) || (!max && a < m) {
            m = a;
        }
    }
    m
}

/// The sum the order accumulates (`Σ x²`, `Σ |x|`, `Σ |x|^p`; `ord` finite, not 0).
#[inline]
fn power_sum<T: Float>(xs: &[T], ord: f64) -> T {
    if ord == 2.0 {
        lanes(xs, |x| x * x)
    } else if ord == 1.0 {
        lanes(xs, Float::abs)
    } else {
        let p = T::of(ord);
        lanes(xs, |x| x.abs().powf(p))
    }
}

/// `s^(1/ord)` for the orders of [`power_sum`].
#[inline]
fn root<T: Float>(s: T, ord: f64) -> T {
    if ord == 2.0 {
        s.sqrt()
    } else if ord == 1.0 {
        s
    } else {
        s.powf(T::of(1.0 / ord))
    }
}

/// The norm of one run of elements.
fn norm_slice<T: NormFloat>(xs: &[T], ord: f64) -> T {
    if ord == f64::INFINITY {
        return extreme(xs, true);
    }
    if ord == f64::NEG_INFINITY {
        return extreme(xs, false);
    }
    if ord == 0.0 {
        return T::of(xs.iter().filter(|&&x| x != T::ZERO).count() as f64);
    }
    finish(xs, power_sum(xs, ord), ord)
}

/// The norm from the fast sum `s`, or recomputed scaled when `s` overflowed or lost
/// digits to subnormals (orders other than 1, whose sum cannot lose more than the result).
fn finish<T: NormFloat>(xs: &[T], s: T, ord: f64) -> T {
    if s.is_nan() || ord == 1.0 || ord.is_nan() {
        return root(s, ord);
    }
    let tiny = T::MIN_NORMAL / T::EPSILON;
    if s.is_finite() && s >= tiny {
        return root(s, ord);
    }
    // scaled: m (Σ (|x|/m)^p)^(1/p), with m the largest magnitude (the smallest for p < 0,
    // so that every term is at most 1)
    let m = extreme(xs, ord > 0.0);
    if m == T::ZERO || !m.is_finite() {
        return m;
    }
    let p = T::of(ord);
    let s = lanes(xs, |x| (x.abs() / m).powf(p));
    m * root(s, ord)
}

/// [`norm_slice`] of one long run, in chunks on all threads. The chunks' partial results
/// are combined in order on the calling thread, so the bits do not depend on how rayon
/// split the work (a parallel `reduce` combines in the order its splits happened).
fn norm_slice_par<T: NormFloat>(xs: &[T], ord: f64) -> T {
    const CHUNK: usize = 1 << 14;
    if !ord.is_finite() || ord == 0.0 {
        let parts: Vec<T> = xs.par_chunks(CHUNK).map(|c| norm_slice(c, ord)).collect();
        return if ord == 0.0 {
            parts.into_iter().fold(T::ZERO, |a, b| a + b)
        } else {
            norm_slice(&parts, ord)
        };
    }
    let parts: Vec<T> = xs.par_chunks(CHUNK).map(|c| power_sum(c, ord)).collect();
    let s = parts.into_iter().fold(T::ZERO, |a, b| a + b);
    finish(xs, s, ord)
}

/// The VJP of [`vector_norm`] for a finite order other than 0 (PyTorch's `norm_backward`,
/// fused: one pass, no graph): `gx = e(x, s)` with one scale `s` per output, from the
/// outputs `y` and cotangents `g` (contiguous, the keepdim shape):
///
/// | order | `s` | `e(x, s)` |
/// |---|---|---|
/// | 1 | `g` | `sgn(x) s` |
/// | 2 | `g / y` (0 where `y = 0`) | `x s` |
/// | `p < 1` | `g y^(1-p)` | `sgn(x) |x|^(p-1) s` (0 where `x = 0`) |
/// | `1 < p < 2` | `g / y^(p-1)` (0 where `y = 0`) | `sgn(x) |x|^(p-1) s` |
/// | `p > 2` | as above | `x |x|^(p-2) s` |
///
/// The result is contiguous, in `l`'s row-major order. `g` of one element stands for that
/// cotangent at every output (a broadcast scalar, as a `sum`'s).
pub(crate) fn vector_norm_backward<T: NormFloat>(
    x: &[T],
    l: &Layout,
    dims: &[usize],
    ord: f64,
    y: &[T],
    g: &[T],
) -> Vec<T> {
    let p = T::of(ord);
    let n_out = y.len();
    debug_assert!(g.len() == n_out || g.len() == 1);
    let g_at = |i: usize| if g.len() == 1 { g[0] } else { g[i] };
    if ord == 2.0 {
        // the hot order: a select and a division, vectorised, for each task's outputs in
        // the task (where the forward wrote them: no scales made on one thread and read
        // on another)
        let scales = |start: usize, s: &mut [T]| {
            let g = if g.len() == 1 { g } else { &g[start..start + s.len()] };
            let y = &y[start..start + s.len()];
            crate::backend::cpu::simd::arch().dispatch(Scale2 { scale: s, y, g });
        };
        return scale_runs(x, l, dims, n_out, scales, |x, s| x * s, true);
    }
    let scale: Vec<T> = (0..n_out)
        .map(|i| {
            let (y, g) = (y[i], g_at(i));
            if ord == 1.0 {
                g
            } else if ord < 1.0 {
                g * y.powf(T::ONE - p)
            } else if y == T::ZERO {
                T::ZERO
            } else {
                g / y.powf(p - T::ONE)
            }
        })
        .collect();
    let scales = |start: usize, s: &mut [T]| s.copy_from_slice(&scale[start..start + s.len()]);
    let pm1 = p - T::ONE;
    let pm2 = p - T::of(2.0);
    // the hot orders get their own loops (no dispatch on the order per element)
    if ord == 1.0 {
        scale_runs(x, l, dims, n_out, scales, |x: T, s| x.sign() * s, false)
    } else {
        let e = move |x: T, s: T| -> T {
            if ord < 1.0 {
                if x == T::ZERO {
                    T::ZERO
                } else {
                    x.sign() * x.abs().powf(pm1) * s
                }
            } else if ord < 2.0 {
                x.sign() * x.abs().powf(pm1) * s
            } else {
                x * x.abs().powf(pm2) * s
            }
        };
        scale_runs(x, l, dims, n_out, scales, e, false)
    }
}

/// `g / y` (0 where `y = 0`) into `scale`, compiled for the machine's SIMD level (`g` of
/// one element: that one for every `y`).
struct Scale2<'a, T> {
    scale: &'a mut [T],
    y: &'a [T],
    g: &'a [T],
}

impl<T: NormFloat> pulp::WithSimd for Scale2<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        #[inline(always)]
        fn one<T: NormFloat>(y: T, g: T) -> T {
            let q = g / if y == T::ZERO { T::ONE } else { y };
            if y == T::ZERO {
                T::ZERO
            } else {
                q
            }
        }
        if let [g] = *self.g {
            for (s, &y) in self.scale.iter_mut().zip(self.y) {
                *s = one(y, g);
            }
        } else {
            for ((s, &y), &g) in self.scale.iter_mut().zip(self.y).zip(self.g) {
                *s = one(y, g);
            }
        }
    }
}

/// `out = e(x, s)` over the runs of `len` elements tiling `xs`, one scale per run,
/// compiled for the machine's SIMD level (with `mul`, `e` is `x s`: the wide kernel's
/// where it applies).
struct ScaleRuns<'a, T, E> {
    out: &'a mut [T],
    xs: &'a [T],
    len: usize,
    scale: &'a [T],
    e: &'a E,
    mul: bool,
}

impl<T: NormFloat, E: Fn(T, T) -> T> pulp::WithSimd for ScaleRuns<'_, T, E> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let ScaleRuns { out, xs, len, scale, e, mul } = self;
        if mul && T::scale_runs_wide(xs, len, scale, out) {
            return;
        }
        #[inline(always)]
        fn go<T: Copy>(out: &mut [T], xs: &[T], len: usize, scale: &[T], e: impl Fn(T, T) -> T) {
            for ((o, xs), &s) in out.chunks_mut(len).zip(xs.chunks(len)).zip(scale) {
                o.iter_mut().zip(xs).for_each(|(o, &x)| *o = e(x, s));
            }
        }
        if len == 16 {
            // 4 x 4 matrices: the run length a constant (the loop unrolls)
            go(out, xs, 16, scale, e);
        } else {
            go(out, xs, len, scale, e);
        }
    }
}

/// `e(x, s)` for every element of `x`, with `s` the scale of its output (the reduced dims
/// `dims`; `n_out` outputs, whose scales `scales(start, s)` writes to `s` from output
/// `start`), contiguous in `l`'s row-major order. Split across threads, each task makes
/// the scales of its own outputs. `mul`: `e` is `x s` (see [`ScaleRuns`]).
#[inline(always)]
fn scale_runs<T: NormFloat>(
    x: &[T],
    l: &Layout,
    dims: &[usize],
    n_out: usize,
    scales: impl Fn(usize, &mut [T]) + Sync,
    e: impl Fn(T, T) -> T + Sync,
    mul: bool,
) -> Vec<T> {
    let all = || {
        let mut s = vec![T::ZERO; n_out];
        scales(0, &mut s);
        s
    };
    let n = l.numel();
    // every output owns one contiguous run (the reduced dims are the trailing ones of a
    // contiguous input): chunks, on all threads when large
    let first = dims.iter().copied().min().unwrap_or(l.rank());
    let trailing = (first..l.rank()).all(|i| dims.contains(&i) || l.dims()[i] == 1);
    if let (Some(r), true) = (l.contiguous_range(), trailing && n > 0) {
        let xs = &x[r];
        let len = n / n_out.max(1);
        // every element is written below
        let mut out = super::pool::overwritten(n, T::ZERO);
        let per = runs_per_task(n_out, len);
        if n_out > 1 && per < n_out {
            // the forward's split (see PAR_TILED)
            super::par::for_each_chunk(&mut out, per * len, |t, out| {
                let xs = &xs[t * per * len..][..out.len()];
                let mut scale = vec![T::ZERO; out.len() / len];
                scales(t * per, &mut scale);
                crate::backend::cpu::simd::arch().dispatch(ScaleRuns {
                    out,
                    xs,
                    len,
                    scale: &scale,
                    e: &e,
                    mul,
                });
            });
            return out;
        }
        let scale = all();
        if n >= PAR_ELEMS && rayon::current_num_threads() > 1 {
            if scale.len() == 1 {
                let s = scale[0];
                out.par_chunks_mut(1 << 14).zip(xs.par_chunks(1 << 14)).for_each(|(o, xs)| {
                    o.iter_mut().zip(xs).for_each(|(o, &x)| *o = e(x, s));
                });
            } else {
                out.par_chunks_mut(len)
                    .zip(xs.par_chunks(len))
                    .zip(scale.par_iter())
                    .with_min_len((PAR_ELEMS / 4 / len).max(1))
                    .for_each(|((o, xs), &s)| {
                        o.iter_mut().zip(xs).for_each(|(o, &x)| *o = e(x, s));
                    });
            }
        } else {
            let scale = &scale;
            crate::backend::cpu::simd::arch().dispatch(ScaleRuns {
                out: &mut out,
                xs,
                len,
                scale,
                e: &e,
                mul,
            });
        }
        return out;
    }
    // general layouts: walk x with the outputs' strides (0 along the reduced dims)
    let scale = all();
    let mut ostr = vec![0usize; l.rank()];
    let mut acc = 1usize;
    for i in (0..l.rank()).rev() {
        if !dims.contains(&i) {
            ostr[i] = acc;
            acc *= l.dims()[i];
        }
    }
    let row = super::strided::ZipRow { a: x, b: &scale[..], f: e };
    super::strided::eval(l.dims(), [l.strides(), &ostr], [l.offset(), 0], &row, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    fn norm(xs: &[f64], ord: f64) -> f64 {
        vector_norm(xs, &Layout::contiguous(Shape::new(vec![xs.len()])), &[0], ord)[0]
    }

    /// Order 2 over the trailing dims of contiguous batches (the AVX-512 kernels where the
    /// CPU has them): the same bits as the portable `norm2_groups` forward, and as
    /// `x (g / y)` backward, for runs of 8, 16, 24 and 256 elements, batches of whole and
    /// partial groups (on one task and split), with zero, tiny, huge, infinite and NaN
    /// runs among them (the scaled recomputation).
    #[test]
    fn wide_order_two_runs_give_the_portable_bits() {
        let mut rng = crate::backend::cpu::XorShift(0x2545_F491_4F6C_DD1D);
        let mut next = || rng.uniform();
        for len in [8usize, 16, 24, 256] {
            for runs in [8usize, 16, 37, 4096 + 5] {
                let mut x: Vec<f64> = (0..runs * len).map(|_| 2.0 * next() - 1.0).collect();
                let scaled = [(1, 0.0), (3, 1e-170), (4, 1e170), (9, 1e-300)];
                let unscaled: Vec<f64> = scaled
                    .iter()
                    .filter(|_| runs > 20)
                    .map(|&(r, _)| norm2_slice(&x[r * len..(r + 1) * len]))
                    .collect();
                if runs > 20 {
                    for (r, v) in scaled {
                        x[r * len..(r + 1) * len].iter_mut().for_each(|x| *x *= v);
                    }
                    x[17 * len + 2] = f64::INFINITY;
                    x[18 * len + 5] = f64::NAN;
                }
                let l = Layout::contiguous(Shape::new(vec![runs, len]));
                let y = vector_norm(&x, &l, &[1], 2.0);
                let mut want = vec![0.0; runs];
                norm2_groups(&x, len, &mut want);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&want), "len {len} runs {runs}: norms");
                if runs > 20 {
                    // the out-of-range runs recomputed scaled: the norm times the factor
                    for (&(r, v), &u) in scaled.iter().zip(&unscaled) {
                        let want = v * u;
                        assert!((y[r] - want).abs() <= 1e-14 * want, "len {len} run {r}");
                    }
                    assert_eq!(y[17], f64::INFINITY);
                    assert!(y[18].is_nan());
                }
                let g: Vec<f64> = (0..runs).map(|_| next() - 0.5).collect();
                for g in [&g[..], &[0.75][..]] {
                    let gx = vector_norm_backward(&x, &l, &[1], 2.0, &y, g);
                    let want: Vec<f64> = (0..runs * len)
                        .map(|i| {
                            let (yr, gr) =
                                (y[i / len], if g.len() == 1 { g[0] } else { g[i / len] });
                            x[i] * if yr == 0.0 { 0.0 } else { gr / yr }
                        })
                        .collect();
                    assert_eq!(bits(&gx), bits(&want), "len {len} runs {runs}: backward");
                }
            }
        }
    }

    #[test]
    fn orders_and_extremes() {
        let x = [3.0, -4.0, 0.0];
        assert_eq!(norm(&x, 2.0), 5.0);
        assert_eq!(norm(&x, 1.0), 7.0);
        assert_eq!(norm(&x, f64::INFINITY), 4.0);
        assert_eq!(norm(&x, f64::NEG_INFINITY), 0.0);
        assert_eq!(norm(&x, 0.0), 2.0);
        assert_eq!(norm(&x, -1.0), 0.0);
        assert!((norm(&x, 3.0) - 91f64.cbrt()).abs() < 1e-14);
        // scaled recomputation on overflow and underflow
        assert!((norm(&[1e200, 1e200], 2.0) / (2f64.sqrt() * 1e200) - 1.0).abs() < 1e-15);
        assert!((norm(&[1e-200, 1e-200], 2.0) / (2f64.sqrt() * 1e-200) - 1.0).abs() < 1e-15);
        assert!((norm(&[1e-200, 2e-200], -2.0) / (0.8f64.sqrt() * 1e-200) - 1.0).abs() < 1e-14);
        assert_eq!(norm(&[f64::INFINITY, 1.0], 2.0), f64::INFINITY);
        assert!(norm(&[f64::NAN, 1.0], 2.0).is_nan());
        assert!(norm(&[f64::NAN, 1.0], f64::INFINITY).is_nan());
        assert!(norm(&[1.0, f64::NAN], f64::NEG_INFINITY).is_nan());
        assert_eq!(norm(&[0.0, 0.0], 3.0), 0.0);
        assert_eq!(norm(&[], 2.0), 0.0);
    }

    #[test]
    fn long_runs_in_parallel_agree() {
        let xs: Vec<f64> = (0..200_000).map(|i| (f64::from(i % 17) - 8.0) * 1e-3).collect();
        for ord in [2.0, 1.0, 3.0, 0.5, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
            let a = norm_slice_par(&xs, ord);
            let b = norm_slice(&xs, ord);
            assert!((a - b).abs() <= 1e-12 * b.abs(), "{ord}: {a} vs {b}");
        }
    }

    #[test]
    fn fused_backward_matches_the_formula_on_every_layout() {
        // x: 2x3, reduce dim 1 (trailing, chunks) and dim 0 (strided walk)
        let x = [1.0, -2.0, 0.5, 3.0, 0.0, -1.0];
        let l = Layout::contiguous(Shape::new(vec![2, 3]));
        for ord in [2.0, 1.0, 3.0, 1.5, 0.5, -1.0] {
            for dim in [0usize, 1] {
                let y = vector_norm(&x, &l, &[dim], ord);
                let g: Vec<f64> = (0..y.len()).map(|k| 0.5 + k as f64).collect();
                let gx = vector_norm_backward(&x, &l, &[dim], ord, &y, &g);
                for i in 0..2 {
                    for j in 0..3 {
                        let k = if dim == 1 { i } else { j };
                        let v = x[i * 3 + j];
                        let want = if v == 0.0 || (ord < 1.0 && y[k] == 0.0) {
                            0.0
                        } else {
                            v.signum() * v.abs().powf(ord - 1.0) * y[k].powf(1.0 - ord) * g[k]
                        };
                        assert!((gx[i * 3 + j] - want).abs() < 1e-14, "{ord} {dim} {i} {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_cotangent_stands_for_every_output() {
        // a sum's cotangent: one element for every output; on a batch of 4 x 4 runs large
        // enough to split across threads, and a small one
        for runs in [4096usize, 3] {
            let x: Vec<f64> =
                (0..runs * 16).map(|i| (f64::from(i as u32 % 11) - 5.0) * 0.3).collect();
            let l = Layout::contiguous(Shape::new(vec![runs, 4, 4]));
            for ord in [2.0, 3.0, 1.0] {
                let y = vector_norm(&x, &l, &[1, 2], ord);
                let full = vector_norm_backward(&x, &l, &[1, 2], ord, &y, &vec![0.75; runs]);
                let one = vector_norm_backward(&x, &l, &[1, 2], ord, &y, &[0.75]);
                assert_eq!(full, one, "{runs} {ord}");
                // and the formula, for order 2: x g / y
                if ord == 2.0 {
                    for (i, (&v, &gx)) in x.iter().zip(&full).enumerate() {
                        assert_eq!(gx, v * (0.75 / y[i / 16]), "{i}");
                    }
                }
            }
        }
    }

    #[test]
    fn tiled_runs_match_strided_runs() {
        // 5 x 7 x 6 elements, with rows that overflow, underflow, hold NaN, inf or zeros
        let mut x: Vec<f64> = (0..210).map(|i| (f64::from(i % 13) - 6.0) * 0.37).collect();
        x[0..6].copy_from_slice(&[1e200, -1e200, 3e199, 0.0, 1.0, 2.0]);
        x[6..12].copy_from_slice(&[1e-200, 2e-200, -1e-201, 0.0, 0.0, 0.0]);
        x[12] = f64::NAN;
        x[18] = f64::INFINITY;
        x[24..30].fill(0.0);
        let l = Layout::contiguous(Shape::new(vec![5, 7, 6]));
        // the same elements through a transposed view: reduced dims not trailing
        let xt: Vec<f64> = super::super::collect_strided(&x, &l.permute(&[2, 0, 1]));
        let lt = Layout::contiguous(Shape::new(vec![6, 5, 7])).permute(&[1, 2, 0]);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&super::super::collect_strided(&xt, &lt)), bits(&x));
        for ord in [2.0, 1.0, 3.0, 0.5, -1.0, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
            for dims in [vec![2], vec![1, 2], vec![0, 1, 2]] {
                let a = vector_norm(&x, &l, &dims, ord);
                let b = vector_norm(&xt, &lt, &dims, ord);
                let c: Vec<f64> = super::super::collect_strided(&x, &l)
                    .chunks(dims.iter().map(|&d| l.dims()[d]).product())
                    .map(|r| norm_slice(r, ord))
                    .collect();
                assert_eq!(bits(&a), bits(&c), "{ord} {dims:?}");
                // the strided path may sum in another order
                for (&b, &c) in b.iter().zip(&c) {
                    let ok = b.to_bits() == c.to_bits() || (b - c).abs() <= 1e-14 * c.abs();
                    assert!(ok, "{ord} {dims:?} transposed: {b} vs {c}");
                }
                if ord.is_finite() && ord != 0.0 {
                    let g: Vec<f64> = (0..a.len()).map(|k| 0.25 + k as f64).collect();
                    let ga = vector_norm_backward(&x, &l, &dims, ord, &a, &g);
                    let gb = vector_norm_backward(&xt, &lt, &dims, ord, &a, &g);
                    assert_eq!(bits(&ga), bits(&gb), "backward {ord} {dims:?}");
                }
            }
        }
    }
    #[test]
    fn grouped_and_split_runs_match_one_run_at_a_time() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // run lengths with and without the grouped order-2 kernel (multiples of 8), run
        // counts that are not multiples of 4, and blocks above PAR_TILED (split per thread)
        for (runs, len) in [(7, 16), (13, 8), (10, 24), (9, 3), (8195, 16), (131, 256), (1000, 40)]
        {
            let mut x: Vec<f64> =
                (0..runs * len).map(|i| ((i * 7919 % 23) as f64 - 11.0) * 0.173).collect();
            // runs that overflow, underflow, hold NaN, inf or zeros, inside groups of four
            x[len..2 * len].fill(1e200);
            x[2 * len..3 * len].fill(-1e-200);
            x[4 * len] = f64::NAN;
            x[5 * len + 1] = f64::INFINITY;
            x[6 * len..7 * len].fill(0.0);
            let l = Layout::contiguous(Shape::new(vec![runs, len]));
            for ord in [2.0, 1.0, 3.0] {
                let want: Vec<f64> = x.chunks(len).map(|r| norm_slice(r, ord)).collect();
                let got = vector_norm(&x, &l, &[1], ord);
                assert_eq!(bits(&got), bits(&want), "{runs}x{len} ord {ord}");
                let g: Vec<f64> = (0..runs).map(|k| 0.25 + k as f64).collect();
                let gx = vector_norm_backward(&x, &l, &[1], ord, &got, &g);
                let want: Vec<f64> = x
                    .chunks(len)
                    .zip(&got)
                    .zip(&g)
                    .flat_map(|((r, &y), &g)| {
                        let s = if ord == 1.0 {
                            g
                        } else if y == 0.0 {
                            0.0
                        } else {
                            g / y.powf(ord - 1.0)
                        };
                        r.iter().map(move |&v| {
                            if ord == 1.0 {
                                (if v == 0.0 || v.is_nan() { 0.0 } else { v.signum() }) * s
                            } else if ord == 2.0 {
                                v * s
                            } else {
                                v * v.abs().powf(ord - 2.0) * s
                            }
                        })
                    })
                    .collect();
                let ok = gx.iter().zip(&want).all(|(&a, &b)| {
                    a.to_bits() == b.to_bits()
                        || (a - b).abs() <= 1e-15 * b.abs()
                        || (a.is_nan() && b.is_nan())
                });

                assert!(ok, "backward {runs}x{len} ord {ord}");
            }
        }
    }
}
