//! The middle factor of `linalg.eigh`'s first-order VJP, fused: `diag(gw) + F ∘ skew(X)`
//! with `X = VᵀgV`, `F_ij = 1 / (w_j − w_i)`, in one pass over each matrix (the tensor
//! ops of the recorded backward take a dozen), with the op's rule at zero gaps: a pair
//! whose gap is negligible gets 0 if its `skew(X)` entry is negligible too, and the
//! gradient is undefined (`None`) otherwise. Computed in f64 for both float dtypes.

use crate::backend::cpu::linalg::lower_tiles as pairs;
use crate::backend::cpu::pool;

/// The middle factors for eigenvalues `w` (`n` per matrix), the products `x` (`n x n`
/// per matrix, row-major) and the eigenvalues' cotangents `gw` (the shape of `w`), with
/// `eps` the dtype's machine epsilon; `None` where a matrix's gradient is undefined.
pub(crate) fn inner_first_order(
    w: &[f64],
    x: &[f64],
    gw: Option<&[f64]>,
    n: usize,
    eps: f64,
) -> Option<Vec<f64>> {
    // every entry is written below (the pairs i < j both ways, the diagonal)
    let mut out = pool::overwritten(x.len(), 0.0f64);
    let nn = (n * n).max(1);
    // the pairs (i, j), i < j, tile by tile: the transposed entry x_ji is read down a
    // column, and row by row that is a cache miss per entry at large orders
    for (b, (wb, (xb, ob))) in
        w.chunks_exact(n.max(1)).zip(x.chunks_exact(nn).zip(out.chunks_exact_mut(nn))).enumerate()
    {
        let wmax = wb.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let mut smax = 0.0f64;
        pairs(n, |i, j| smax = smax.max(((xb[i * n + j] - xb[j * n + i]) * 0.5).abs()));
        let skew_tol = eps.sqrt() * smax;
        let mut undefined = false;
        // F ∘ skew(X) is symmetric (both factors antisymmetric): each pair written twice
        pairs(n, |i, j| {
            let s = (xb[i * n + j] - xb[j * n + i]) * 0.5;
            let gap = wb[j] - wb[i];
            // NaN gaps are not degenerate: the NaN goes through
            let degenerate = gap.abs() <= gap_tol;
            undefined |= degenerate && s.abs() > skew_tol && smax > 0.0;
            let v = if degenerate { 0.0 } else { s / gap };
            ob[i * n + j] = v;
            ob[j * n + i] = v;
        });
        if undefined {
            pool::give(out);
            return None;
        }
        for i in 0..n {
            ob[i * n + i] = gw.map_or(0.0, |g| g[b * n + i]);
        }
    }
    Some(out)
}
