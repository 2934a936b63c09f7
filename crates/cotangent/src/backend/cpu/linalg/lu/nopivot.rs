//! LU without pivoting, `A = L U` (Doolittle; `torch.linalg.lu_factor(A, pivot=False)`).
//!
//! No row is interchanged, so the factorisation exists exactly when the leading principal
//! minors of orders `1..k` that it divides by are nonsingular (diagonally dominant and
//! positive-definite matrices, for instance), and it is stable only for such classes. A
//! zero pivot is not an error here: its column of `L` is left unscaled, as LAPACK's
//! `getf2` leaves one, the elimination goes on, and the caller reads the pivot from `U`'s
//! diagonal (with no interchanges, `U[j, j]` is exactly the pivot of step `j`).
//!
//! Right-looking and blocked, as LAPACK's `getrf`: a panel of [`NB`] columns is factorised
//! by rank-1 updates, the block row of `U` beside it is a unit lower triangular solve,
//! and the trailing matrix takes one matrix product per panel.

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place;
use faer::{Accum, MatMut, MatRef, Par};

use super::super::{colmajor_layout, for_each_matrix, Batch, LinalgElem};
use crate::layout::Layout;

/// Columns per panel.
const NB: usize = 32;
/// Work per matrix above which faer's products may use both threads.
const PAR_WORK: usize = 256 * 256 * 256;

/// The unpivoted LU of the column-major `m x n` matrix `a` (leading dimension `m`), in
/// place: `L` strictly below the diagonal (unit diagonal implied), `U` on and above.
pub(crate) fn lu_nopivot_one<T: LinalgElem>(a: &mut [T], m: usize, n: usize, par: Par) {
    let k = m.min(n);
    let tiny = <T as faer::traits::RealField>::min_positive_impl();
    let mut j0 = 0;
    while j0 < k {
        let nb = NB.min(k - j0);
        let (left, right) = a.split_at_mut((j0 + nb) * m);
        // the panel: columns j0..j0 + nb, rows j0..m, by rank-1 updates within it
        for j in j0..j0 + nb {
            let (done, rest) = left.split_at_mut((j + 1) * m);
            let col = &mut done[j * m..];
            let d = col[j];
            if d.abs() >= tiny {
                let inv = T::ONE / d;
                for v in &mut col[j + 1..] {
                    *v *= inv;
                }
            } else if d != T::ZERO {
                // (a subnormal pivot's reciprocal overflows: divide, as LAPACK's dgetf2)
                for v in &mut col[j + 1..] {
                    *v /= d;
                }
            }
            let lcol = &col[j + 1..];
            for c in rest.chunks_exact_mut(m) {
                let f = c[j];
                if f != T::ZERO {
                    for (x, &l) in c[j + 1..].iter_mut().zip(lcol) {
                        *x -= l * f;
                    }
                }
            }
        }
        let nr = n - (j0 + nb);
        if nr > 0 {
            // U12 = L11⁻¹ A12, then A22 −= L21 U12
            let l11 = MatRef::from_column_major_slice_with_stride(&left[j0 * m + j0..], nb, nb, m);
            let r = MatMut::from_column_major_slice_with_stride_mut(right, m, nr, m);
            let (top, bottom) = r.split_at_row_mut(j0 + nb);
            let mut u12 = top.subrows_mut(j0, nb);
            solve_unit_lower_triangular_in_place(l11, u12.as_mut(), par);
            let below = m - (j0 + nb);
            if below > 0 {
                let l21 = MatRef::from_column_major_slice_with_stride(
                    &left[j0 * m + j0 + nb..],
                    below,
                    nb,
                    m,
                );
                matmul(bottom, Accum::Add, l21, u12.as_ref(), -T::ONE, par);
            }
        }
        j0 += nb;
    }
}

/// Batched unpivoted LU of `a: (*, m, n)`: the packed factors (column-major `(*, m, n)`),
/// the trivial interchanges `1..=k` per matrix (`k = min(m, n)`), and `info` per matrix
/// (the 1-based index of the first zero pivot, or 0).
pub(crate) fn lu_factor_nopivot<T: LinalgElem>(
    a: &[T],
    al: &Layout,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let size = m * n;
    let mut out = vec![T::ZERO; ba.len() * size];
    let work = m * n * k;
    for_each_matrix(&mut out, size, work, work >= PAR_WORK, |i, dst, _, par| {
        ba.load(a, i, dst);
        lu_nopivot_one(dst, m, n, par);
    });
    let piv: Vec<i64> = (0..ba.len()).flat_map(|_| 1..=k as i64).collect();
    let info = if size == 0 {
        vec![0; ba.len()]
    } else {
        out.chunks_exact(size)
            .map(|f| (0..k).find(|&j| f[j * m + j] == T::ZERO).map_or(0, |j| j as i64 + 1))
            .collect()
    };
    (out, colmajor_layout(&ba.dims, m, n), piv, info)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `L U` of the packed column-major factors.
    fn product(f: &[f64], m: usize, n: usize) -> Vec<f64> {
        let k = m.min(n);
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[j * m + i] = (0..=i.min(j).min(k - 1))
                    .map(|p| if p == i { 1.0 } else { f[p * m + i] } * f[j * m + p])
                    .sum();
            }
        }
        out
    }

    #[test]
    fn reconstructs_diagonally_dominant_matrices_across_panels() {
        for (m, n) in [(1, 1), (5, 5), (40, 40), (70, 33), (33, 70), (100, 100)] {
            let mut s = 7u64;
            let mut a: Vec<f64> = (0..m * n)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                })
                .collect();
            for i in 0..m.min(n) {
                a[i * m + i] += n as f64;
            }
            let mut f = a.clone();
            lu_nopivot_one(&mut f, m, n, Par::Seq);
            let back = product(&f, m, n);
            let err = back.iter().zip(&a).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
            assert!(err < 1e-12 * n as f64, "{m}x{n}: {err}");
        }
    }
}
