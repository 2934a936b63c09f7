//! The singular value decomposition of complex matrices, batched: faer's Householder
//! bidiagonalisation of the taller of `A` and `Aᴴ` (scaled to order one by a power of
//! two), the phases of the complex bidiagonal scaled out (`B = Pᴴ B_r Qᴴ` with `B_r` real
//! and non-negative, `P`, `Q` diagonals of unit phases), the real SVD's own bidiagonal
//! divide and conquer on `B_r`, and the back-transformations (`U = Q_L Pᴴ U_r`,
//! `V = Q_R Q V_r`). faer's own SVD is not used: its bidiagonal stage returned wrong
//! factors on hard real matrices (see the real kernel).
//!
//! The gauge: each singular pair `(u_j, v_j)` is defined up to a common unit phase; here
//! `u_j`'s component of largest modulus (the first on ties) is real and positive.

use std::sync::atomic::{AtomicUsize, Ordering};

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::linalg::svd::bidiag::{bidiag_in_place, bidiag_in_place_scratch};
use faer::{Conj, MatMut, MatRef, Par, Spec};

use super::{zero, ComplexElem, PAR_N, R};
use crate::backend::cpu::linalg::bidiag_dc::{bidiag_dc, Work};
use crate::backend::cpu::linalg::jacobi::pow2_near;
use crate::backend::cpu::linalg::{colmajor_layout, for_each_matrix, Batch};
use crate::backend::cpu::pool;
use crate::complex::ComplexFloat;
use crate::dtype::Float;
use crate::layout::Layout;
use crate::shape::Shape;

fn one<T: ComplexElem>() -> T {
    T::new(<R<T> as Float>::ONE, <R<T> as Float>::ZERO)
}

/// `conj(x) / |x|` (1 for 0): the unit phase that takes `x` to `|x|`.
fn unphase<T: ComplexElem>(x: T) -> T {
    let r = x.abs();
    if r == <R<T> as Float>::ZERO {
        one::<T>()
    } else {
        T::new(x.re() / r, -x.im() / r)
    }
}

/// The SVD of the column-major `mm x k` `a` (`mm >= k >= 1`, finite, of order one;
/// overwritten): singular values (descending) into `s`, and with `uv = Some((u, ku, v))`
/// `U` (`mm x ku`, `ku` = `k` or `mm`, column-major) and `V` (`k x k`). False if the
/// bidiagonal stage failed.
fn tall_svd<T: ComplexElem>(
    a: &mut [T],
    mm: usize,
    k: usize,
    s: &mut [R<T>],
    uv: Option<(&mut [T], usize, &mut [T])>,
    par: Par,
) -> bool {
    let rz = <R<T> as Float>::ZERO;
    let bs = recommended_block_size::<T>(mm, k);
    let mut hl = vec![zero::<T>(); bs * k];
    let mut hr = vec![zero::<T>(); bs * k.saturating_sub(1)];
    let ku = uv.as_ref().map_or(k, |x| x.1);
    let req = StackReq::any_of(&[
        bidiag_in_place_scratch::<T>(mm, k, par, Spec::default()),
        apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(mm, bs, ku),
        apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(
            k.saturating_sub(1),
            bs,
            k,
        ),
    ]);
    let mut mem = MemBuffer::new(req);
    bidiag_in_place(
        MatMut::from_column_major_slice_mut(a, mm, k),
        MatMut::from_column_major_slice_mut(&mut hl, bs, k),
        MatMut::from_column_major_slice_mut(&mut hr, bs, k.saturating_sub(1)),
        par,
        MemStack::new(&mut mem),
        Spec::default(),
    );
    // B = Pᴴ B_r Qᴴ: p_i b_i q_i = |b_i|, p_i c_i q_(i+1) = |c_i|
    let mut p = vec![one::<T>(); k];
    let mut q = vec![one::<T>(); k];
    let mut d = vec![rz; k];
    let mut e = vec![rz; k];
    for i in 0..k {
        let b = a[i * mm + i];
        p[i] = unphase(ComplexFloat::mul(b, q[i]));
        d[i] = b.abs();
        if i + 1 < k {
            let c = a[(i + 1) * mm + i];
            q[i + 1] = unphase(ComplexFloat::mul(p[i], c));
            e[i] = c.abs();
        }
    }
    let mut work = Work::default();
    let parallel = matches!(par, Par::Rayon(_));
    let Some((u, ku, v)) = uv else {
        if !bidiag_dc(&mut d, &mut e, None, parallel, &mut work) {
            return false;
        }
        s.copy_from_slice(&d);
        return true;
    };
    let mut ur = vec![rz; k * k];
    let mut vr = vec![rz; k * k];
    if !bidiag_dc(&mut d, &mut e, Some((&mut ur, &mut vr)), parallel, &mut work) {
        return false;
    }
    s.copy_from_slice(&d);
    // U = Q_L [Pᴴ U_r, 0; 0, I]
    u.fill(zero::<T>());
    for c in 0..k {
        for r in 0..k {
            u[c * mm + r] = p[r].conj().scale(ur[c * k + r]);
        }
    }
    for c in k..ku {
        u[c * mm + c] = one::<T>();
    }
    apply_block_householder_sequence_on_the_left_in_place_with_conj(
        MatRef::from_column_major_slice(a, mm, k),
        MatRef::from_column_major_slice(&hl, bs, k),
        Conj::No,
        MatMut::from_column_major_slice_mut(u, mm, ku),
        par,
        MemStack::new(&mut mem),
    );
    // V = Q_R Q V_r, the right reflectors (stored along the rows above the diagonal)
    // mirrored below it, as faer's back-transformation reads them
    for c in 0..k {
        for r in 0..k {
            v[c * k + r] = q[r].scale(vr[c * k + r]);
        }
    }
    if k > 1 {
        let mut w = vec![zero::<T>(); k * k];
        for j in 0..k {
            for i in 0..k {
                w[j * k + i] = if i > j { a[i * mm + j] } else { a[j * mm + i] };
            }
        }
        apply_block_householder_sequence_on_the_left_in_place_with_conj(
            MatRef::from_column_major_slice(&w, k, k).submatrix(1, 0, k - 1, k - 1),
            MatRef::from_column_major_slice(&hr, bs, k - 1),
            Conj::Yes,
            MatMut::from_column_major_slice_mut(v, k, k).subrows_mut(1, k - 1),
            par,
            MemStack::new(&mut mem),
        );
    }
    true
}

/// The factors of a batched complex SVD: `U` column-major `(*, m, ku)`, `S` real
/// contiguous `(*, k)`, `Vh` contiguous `(*, kv, n)`, `U` and `Vh` only when asked.
pub(crate) type SvdFactors<T> =
    (Option<(Vec<T>, Layout)>, (Vec<R<T>>, Layout), Option<(Vec<T>, Layout)>);

/// The SVD of each `a: (*, m, n)` (`full`: `U` `m x m` and `Vh` `n x n`, else `m x k`
/// and `k x n`), singular values descending, the gauge above. `Err(batch)` for the
/// first matrix not decomposed (a NaN or an infinity in it).
pub(crate) fn svd<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    want_uv: bool,
    full: bool,
) -> Result<SvdFactors<T>, usize> {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let (ku, kv) = if full { (m, n) } else { (k, k) };
    let (usz, vsz) = if want_uv { (m * ku, kv * n) } else { (0, 0) };
    // per matrix: U, then S (as complex numbers), then Vh
    let size = usz + k + vsz;
    let len = ba.len();
    let failed = AtomicUsize::new(usize::MAX);
    let mut out = pool::filled(len * size, zero::<T>());
    let (mm, kk) = (m.max(n), k);
    for_each_matrix(&mut out, size, (mm * kk * kk).max(1) * 8, kk >= PAR_N, |i, dst, buf, par| {
        // the taller of A and Aᴴ, column-major mm x k
        buf.resize(m * n, zero::<T>());
        ba.load(a, i, buf);
        let mut t = vec![zero::<T>(); mm * kk];
        if m >= n {
            t.copy_from_slice(buf);
        } else {
            for c in 0..n {
                for r in 0..m {
                    t[r * n + c] = buf[c * m + r].conj();
                }
            }
        }
        if t.iter().any(|z| !(z.re().is_finite() && z.im().is_finite())) {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        let (u_out, rest) = dst.split_at_mut(usz);
        let (s_out, vh_out) = rest.split_at_mut(k);
        if k == 0 {
            // no singular values: U and Vh are identities (full) or empty
            for c in 0..ku.min(m) {
                u_out[c * m + c] = one::<T>();
            }
            for c in 0..kv.min(n) {
                vh_out[c * n + c] = one::<T>();
            }
            return;
        }
        let amax =
            t.iter().fold(<R<T> as Float>::ZERO, |x, z| if z.abs() > x { z.abs() } else { x });
        let scale =
            if amax == <R<T> as Float>::ZERO { <R<T> as Float>::ONE } else { pow2_near(amax) };
        let inv = <R<T> as Float>::ONE / scale;
        for z in &mut t {
            *z = z.scale(inv);
        }
        let mut s = vec![<R<T> as Float>::ZERO; kk];
        // the tall problem's U (mm x kut) and V (k x k)
        let kut = if m >= n { ku } else { kv };
        let mut ut = vec![zero::<T>(); if want_uv { mm * kut } else { 0 }];
        let mut vt = vec![zero::<T>(); if want_uv { kk * kk } else { 0 }];
        let uv = want_uv.then_some((&mut ut[..], kut, &mut vt[..]));
        if !tall_svd(&mut t, mm, kk, &mut s, uv, par) {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        for (o, x) in s_out.iter_mut().zip(&s) {
            *o = T::new(*x * scale, <R<T> as Float>::ZERO);
        }
        if !want_uv {
            return;
        }
        // A = U S Vᴴ; for a wide A, Aᴴ = U_t S V_tᴴ gives U = V_t and V = U_t
        let (uc, vc): (Vec<T>, Vec<T>) =
            if m >= n { (ut, embed(&vt, kk, n, kv)) } else { (embed(&vt, kk, m, ku), ut) };
        // (uc: m x ku, vc: n x kv, column-major) the gauge, then Vh = Vᴴ row-major
        let mut uc = uc;
        let mut vc = vc;
        for j in 0..k {
            let col = &uc[j * m..(j + 1) * m];
            let mut best = (0, <R<T> as Float>::ZERO);
            for (r, z) in col.iter().enumerate() {
                if z.abs() > best.1 {
                    best = (r, z.abs());
                }
            }
            if best.1 > <R<T> as Float>::ZERO {
                let ph = unphase(col[best.0]);
                for z in &mut uc[j * m..(j + 1) * m] {
                    *z = ComplexFloat::mul(*z, ph);
                }
                uc[j * m + best.0] = T::new(best.1, <R<T> as Float>::ZERO);
                for z in &mut vc[j * n..(j + 1) * n] {
                    *z = ComplexFloat::mul(*z, ph);
                }
            }
        }
        u_out.copy_from_slice(&uc);
        for (o, z) in vh_out.iter_mut().zip(&vc) {
            *o = z.conj();
        }
    });
    let f = failed.into_inner();
    if f != usize::MAX {
        return Err(f);
    }
    let mut uo = want_uv.then(|| pool::filled(len * usz, zero::<T>()));
    let mut so = Vec::with_capacity(len * k);
    let mut vo = want_uv.then(|| pool::filled(len * vsz, zero::<T>()));
    if size > 0 {
        for (b, blk) in out.chunks_exact(size).enumerate() {
            if let Some(u) = uo.as_mut() {
                u[b * usz..(b + 1) * usz].copy_from_slice(&blk[..usz]);
            }
            so.extend(blk[usz..usz + k].iter().map(|z| z.re()));
            if let Some(v) = vo.as_mut() {
                v[b * vsz..(b + 1) * vsz].copy_from_slice(&blk[usz + k..]);
            }
        }
    } else {
        so.resize(len * k, <R<T> as Float>::ZERO);
    }
    let mut sdims = ba.dims.clone();
    sdims.push(k);
    let mut vdims = ba.dims.clone();
    vdims.extend([kv, n]);
    Ok((
        uo.map(|u| (u, colmajor_layout(&ba.dims, m, ku))),
        (so, Layout::contiguous(Shape::new(sdims))),
        vo.map(|v| (v, Layout::contiguous(Shape::new(vdims)))),
    ))
}

/// The `k x k` column-major `v` as the first `k` columns of a `rows x cols` column-major
/// matrix whose other columns complete it with the identity (`cols` is `k` or `rows`;
/// the tall problem's `V` is square, `k = rows`, so the completion is empty).
fn embed<T: ComplexElem>(v: &[T], k: usize, rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![zero::<T>(); rows * cols];
    for c in 0..k {
        out[c * rows..c * rows + k].copy_from_slice(&v[c * k..(c + 1) * k]);
    }
    for c in k..cols {
        out[c * rows + c] = one::<T>();
    }
    out
}
