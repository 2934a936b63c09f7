//! Householder QR of complex matrices with LAPACK's conventions (`zgeqrf`, `zungqr`),
//! batched.
//!
//! Reflector `j` is `zlarfg`'s: `H = I − τ v vᴴ` with `v_j = 1`, chosen so that
//! `Hᴴ [α; x] = [β; 0]` with `β = −sign(Re α) ‖[α; x]‖` real, so `R`'s diagonal is real
//! (and of the opposite sign to the real part of the pivot it came from), as LAPACK's and
//! so PyTorch's; a column with nothing to eliminate and a real pivot gets `τ = 0`. The
//! factorisation runs in panels of [`NB`] columns: within a panel reflector by reflector,
//! then the panel's block reflector `I − V T Vᴴ` (`zlarft`'s `T`) updates the trailing
//! columns by matrix products; `Q` is formed block by block the same way, backwards.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::{zero, ComplexElem, PAR_N, R};
use crate::backend::cpu::linalg::{colmajor_layout, for_each_matrix, Batch};
use crate::backend::cpu::pool;
use crate::backend::QrSpec;
use crate::complex::ComplexFloat;
use crate::dtype::Float;
use crate::layout::Layout;

/// Columns per panel.
const NB: usize = 32;

fn one<T: ComplexElem>() -> T {
    T::new(<R<T> as Float>::ONE, <R<T> as Float>::ZERO)
}

/// Below this many multiply-adds a reflector's application (and, times 8, a block
/// reflector's Gram matrix) runs as plain loops: faer's products cost more to set up.
const SMALL_WORK: usize = 1024;

/// `‖x‖₂`, scaled so that it neither overflows nor underflows.
fn norm2<T: ComplexElem>(x: &[T]) -> R<T> {
    let rz = <R<T> as Float>::ZERO;
    let scale = x.iter().fold(rz, |m, z| {
        let a = z.re().abs();
        let b = z.im().abs();
        let c = if a > b { a } else { b };
        if c > m {
            c
        } else {
            m
        }
    });
    if scale == rz || !scale.is_finite() {
        return scale;
    }
    let inv = <R<T> as Float>::ONE / scale;
    let s = x.iter().fold(rz, |s, z| {
        let (a, b) = (z.re() * inv, z.im() * inv);
        s + a * a + b * b
    });
    scale * s.sqrt()
}

/// `√(x² + y² + z²)` without overflow (LAPACK's `dlapy3`).
fn lapy3<F: Float>(x: F, y: F, z: F) -> F {
    let (x, y, z) = (x.abs(), y.abs(), z.abs());
    let w = if x > y { x } else { y };
    let w = if w > z { w } else { z };
    if w == F::ZERO {
        return x + y + z;
    }
    let (a, b, c) = (x / w, y / w, z / w);
    w * (a * a + b * b + c * c).sqrt()
}

/// LAPACK's `zlarfg`: the reflector that maps `[α; x]` to `[β; 0]`. Scales `x` into the
/// reflector's vector (below its implied 1) and returns `(β, τ)`.
fn larfg<T: ComplexElem>(alpha: T, x: &mut [T]) -> (R<T>, T) {
    let rz = <R<T> as Float>::ZERO;
    let mut xnorm = norm2(x);
    let (mut alphr, mut alphi) = (alpha.re(), alpha.im());
    if xnorm == rz && alphi == rz {
        return (alphr, zero::<T>());
    }
    // Fortran's SIGN(1, a): negative for a negative zero too
    let sign = |a: R<T>| {
        let negative = a < rz || (a == rz && <R<T> as Float>::ONE / a < rz);
        if negative {
            -<R<T> as Float>::ONE
        } else {
            <R<T> as Float>::ONE
        }
    };
    let mut beta = -sign(alphr) * lapy3(alphr, alphi, xnorm);
    let safmin = <R<T> as faer::traits::RealField>::min_positive_impl() / <R<T> as Float>::EPSILON;
    let rsafmn = <R<T> as Float>::ONE / safmin;
    let mut knt = 0;
    if beta.abs() < safmin {
        // β may be inaccurate: scale x and recompute it (as zlarfg)
        loop {
            knt += 1;
            for z in x.iter_mut() {
                *z = z.scale(rsafmn);
            }
            beta *= rsafmn;
            alphr *= rsafmn;
            alphi *= rsafmn;
            if beta.abs() >= safmin || knt >= 20 {
                break;
            }
        }
        xnorm = norm2(x);
        beta = -sign(alphr) * lapy3(alphr, alphi, xnorm);
    }
    let tau = T::new((beta - alphr) / beta, -alphi / beta);
    let d = T::new(alphr - beta, alphi);
    let s = ComplexFloat::div(one::<T>(), d);
    for z in x.iter_mut() {
        *z = ComplexFloat::mul(*z, s);
    }
    for _ in 0..knt {
        beta *= safmin;
    }
    (beta, tau)
}

/// Applies `Hᴴ = I − conj(τ) v vᴴ` (`v` with its implied leading 1: `v[0]` is not read)
/// to the column-major block `c` (`rows x cols`, leading dimension `ld`).
fn apply_left_adjoint<T: ComplexElem>(
    v: &[T],
    tau: T,
    c: &mut [T],
    rows: usize,
    cols: usize,
    ld: usize,
) {
    if tau == zero::<T>() {
        return;
    }
    let ct = tau.conj();
    if rows * cols >= SMALL_WORK {
        // w = vᴴ C, then C −= v (conj(τ) w), as two products (v made explicit)
        let mut ve = Vec::with_capacity(rows);
        ve.push(one::<T>());
        ve.extend_from_slice(&v[1..rows]);
        let vm = MatRef::from_column_major_slice(&ve, rows, 1);
        let mut cm = MatMut::from_column_major_slice_with_stride_mut(c, rows, cols, ld);
        let mut w = vec![zero::<T>(); cols];
        let mut wm = MatMut::from_column_major_slice_mut(&mut w, 1, cols);
        matmul(wm.as_mut(), Accum::Replace, vm.adjoint(), cm.as_ref(), one::<T>(), Par::Seq);
        matmul(cm.as_mut(), Accum::Add, vm, wm.as_ref(), -ct, Par::Seq);
        return;
    }
    for j in 0..cols {
        let col = &mut c[j * ld..j * ld + rows];
        // w = vᴴ c
        let mut w = col[0];
        for i in 1..rows {
            w += ComplexFloat::mul(v[i].conj(), col[i]);
        }
        let f = ComplexFloat::mul(ct, w);
        col[0] -= f;
        for i in 1..rows {
            col[i] -= ComplexFloat::mul(v[i], f);
        }
    }
}

/// The block reflector of reflectors `v` (`rows x jb`, column-major, unit lower
/// trapezoidal and explicit) and `tau`: `T` (`jb x jb`, upper triangular, column-major)
/// with `H₁ ⋯ H_jb = I − V T Vᴴ` (LAPACK's `zlarft`, forward, columnwise).
fn larft<T: ComplexElem>(v: &[T], rows: usize, jb: usize, tau: &[T], t: &mut [T]) {
    t.fill(zero::<T>());
    let mut z = vec![zero::<T>(); jb];
    // V[:, p]ᴴ v_i for p < i: v_i is zero above its row i (explicit), so these are the
    // entries of the Gram matrix Vᴴ V, one product when the panel is large
    let gram = (rows * jb * jb >= SMALL_WORK * 8).then(|| {
        let vm = MatRef::from_column_major_slice(v, rows, jb);
        let mut g = vec![zero::<T>(); jb * jb];
        let gm = MatMut::from_column_major_slice_mut(&mut g, jb, jb);
        matmul(gm, Accum::Replace, vm.adjoint(), vm, one::<T>(), Par::Seq);
        g
    });
    for i in 0..jb {
        t[i * jb + i] = tau[i];
        if i == 0 {
            continue;
        }
        // z = −τ_i V[:, 0..i]ᴴ v_i, then T[0..i, i] = T[0..i, 0..i] z
        for (p, zp) in z.iter_mut().enumerate().take(i) {
            let s = if let Some(g) = &gram {
                g[i * jb + p]
            } else {
                let mut s = zero::<T>();
                for r in i..rows {
                    s += ComplexFloat::mul(v[p * rows + r].conj(), v[i * rows + r]);
                }
                s
            };
            *zp = ComplexFloat::mul(-tau[i], s);
        }
        for r in 0..i {
            let mut s = zero::<T>();
            for p in r..i {
                s += ComplexFloat::mul(t[p * jb + r], z[p]);
            }
            t[i * jb + r] = s;
        }
    }
}

/// `C ← (I − V T Vᴴ) C` (or with `Tᴴ` if `adjoint`) for `C` (`rows x cols`, column-major,
/// leading dimension `ld`), by matrix products.
#[allow(clippy::too_many_arguments)]
fn apply_block<T: ComplexElem>(
    v: &[T],
    t: &[T],
    rows: usize,
    jb: usize,
    c: &mut [T],
    cols: usize,
    ld: usize,
    adjoint: bool,
    par: Par,
) {
    if cols == 0 || rows == 0 {
        return;
    }
    let vm = MatRef::from_column_major_slice(v, rows, jb);
    let tm = MatRef::from_column_major_slice(t, jb, jb);
    let mut cm = MatMut::from_column_major_slice_with_stride_mut(c, rows, cols, ld);
    let mut w = vec![zero::<T>(); jb * cols];
    let mut w2 = vec![zero::<T>(); jb * cols];
    let mut wm = MatMut::from_column_major_slice_mut(&mut w, jb, cols);
    matmul(wm.as_mut(), Accum::Replace, vm.adjoint(), cm.as_ref(), one::<T>(), par);
    let mut w2m = MatMut::from_column_major_slice_mut(&mut w2, jb, cols);
    if adjoint {
        matmul(w2m.as_mut(), Accum::Replace, tm.adjoint(), wm.as_ref(), one::<T>(), par);
    } else {
        matmul(w2m.as_mut(), Accum::Replace, tm, wm.as_ref(), one::<T>(), par);
    }
    matmul(cm.as_mut(), Accum::Add, vm, w2m.as_ref(), -one::<T>(), par);
}

/// The explicit reflectors of columns `j0..j0 + jb` of the factored `a` (`m` rows):
/// `(m − j0) x jb`, unit lower trapezoidal.
fn panel_v<T: ComplexElem>(a: &[T], m: usize, j0: usize, jb: usize, v: &mut Vec<T>) {
    let rows = m - j0;
    v.clear();
    v.resize(rows * jb, zero::<T>());
    for p in 0..jb {
        v[p * rows + p] = one::<T>();
        for r in p + 1..rows {
            v[p * rows + r] = a[(j0 + p) * m + j0 + r];
        }
    }
}

/// `zgeqrf` of the column-major `m x n` `a` in place: `R` on and above the diagonal (a
/// real diagonal), the reflectors below it, `τ` into `tau` (`min(m, n)`).
fn geqrf<T: ComplexElem>(a: &mut [T], m: usize, n: usize, tau: &mut [T], par: Par) {
    let k = m.min(n);
    let mut v = Vec::new();
    let mut t = Vec::new();
    let mut j0 = 0;
    while j0 < k {
        let jb = NB.min(k - j0);
        // the panel, reflector by reflector
        for j in j0..j0 + jb {
            let (head, rest) = a[j * m..].split_at_mut(m);
            let col = &mut head[j..];
            let (alpha, x) = col.split_at_mut(1);
            let (beta, tj) = larfg(alpha[0], x);
            tau[j] = tj;
            alpha[0] = T::new(beta, <R<T> as Float>::ZERO);
            // the rest of the panel
            let cols = j0 + jb - j - 1;
            if cols > 0 {
                apply_left_adjoint(&head[j..], tj, &mut rest[j..], m - j, cols, m);
            }
        }
        let cols = n - (j0 + jb);
        if cols > 0 {
            panel_v(a, m, j0, jb, &mut v);
            t.resize(jb * jb, zero::<T>());
            larft(&v, m - j0, jb, &tau[j0..j0 + jb], &mut t);
            let c = &mut a[(j0 + jb) * m + j0..];
            apply_block(&v, &t, m - j0, jb, c, cols, m, true, par);
        }
        j0 += jb;
    }
}

/// `zungqr`: the first `qn` columns of `H₁ ⋯ H_k` from the reflectors below the diagonal
/// of the factored `a` (`m x n`, column-major) and `tau`, into `q` (`m x qn`,
/// column-major).
fn ungqr<T: ComplexElem>(a: &[T], m: usize, k: usize, tau: &[T], q: &mut [T], qn: usize, par: Par) {
    q.fill(zero::<T>());
    for j in 0..qn.min(m) {
        q[j * m + j] = one::<T>();
    }
    let mut v = Vec::new();
    let mut t = Vec::new();
    // the blocks backwards: Q ← (I − V T Vᴴ) Q on rows j0.., columns j0..
    let starts: Vec<usize> = (0..k).step_by(NB).collect();
    for &j0 in starts.iter().rev() {
        let jb = NB.min(k - j0);
        panel_v(a, m, j0, jb, &mut v);
        t.resize(jb * jb, zero::<T>());
        larft(&v, m - j0, jb, &tau[j0..j0 + jb], &mut t);
        let c = &mut q[j0 * m + j0..];
        apply_block(&v, &t, m - j0, jb, c, qn - j0, m, false, par);
    }
}

/// Householder QR of each `a: (*, m, n)`: `Q` (if `spec.want_q`; `m x m` if
/// `spec.complete`, else `m x k`) and `R` (`m x n` if complete, else `k x n`), both
/// column-major, with their layouts.
#[allow(clippy::type_complexity)]
pub(crate) fn qr<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    spec: QrSpec,
) -> (Option<(Vec<T>, Layout)>, (Vec<T>, Layout)) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let qn = if spec.complete { m } else { k };
    let rr = if spec.complete { m } else { k };
    let qsize = if spec.want_q { m * qn } else { 0 };
    // per matrix: the factored matrix, then Q
    let size = m * n + qsize;
    let len = ba.len();
    let mut out = pool::filled(len * size, zero::<T>());
    let work = (m * n * k).max(1) * 4;
    for_each_matrix(&mut out, size, work, k >= PAR_N, |i, dst, _, par| {
        let (f, q) = dst.split_at_mut(m * n);
        ba.load(a, i, f);
        let mut tau = vec![zero::<T>(); k];
        geqrf(f, m, n, &mut tau, par);
        if spec.want_q {
            ungqr(f, m, k, &tau, q, qn, par);
        }
    });
    let mut r = pool::filled(len * rr * n, zero::<T>());
    let mut q = spec.want_q.then(|| pool::filled(len * qsize, zero::<T>()));
    if size > 0 {
        for (b, blk) in out.chunks_exact(size).enumerate() {
            let rb = &mut r[b * rr * n..(b + 1) * rr * n];
            for c in 0..n {
                for row in 0..=c.min(rr.saturating_sub(1)) {
                    if row < rr {
                        rb[c * rr + row] = blk[c * m + row];
                    }
                }
            }
            if let Some(q) = q.as_mut() {
                q[b * qsize..(b + 1) * qsize].copy_from_slice(&blk[m * n..]);
            }
        }
    }
    let q = q.map(|q| (q, colmajor_layout(&ba.dims, m, qn)));
    (q, (r, colmajor_layout(&ba.dims, rr, n)))
}
