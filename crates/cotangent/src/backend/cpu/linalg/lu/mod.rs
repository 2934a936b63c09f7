//! LU with partial pivoting (LAPACK `getrf` semantics), batched, and what is computed
//! from it, by stage:
//! - [`factor`]: the factorisation. Small matrices (`min(m, n) <= UNBLOCKED`) go through
//!   an allocation-free right-looking loop; larger ones through faer's recursive blocked
//!   LU, whose row permutation is converted back to LAPACK's interchange sequence. faer
//!   divides by a zero pivot (filling the rest with NaN) where LAPACK skips the column,
//!   so a factorisation that meets an exactly zero pivot is redone by the unblocked loop,
//!   which matches LAPACK; so is one with a subnormal pivot, whose reciprocal overflows
//!   (the unblocked loop then divides by it, as LAPACK's `dgetf2` does);
//! - [`solve`]: the solve with the factors (`getrs`);
//! - [`det`]: determinants read off the factors, and the SVD-based cofactor matrix that
//!   `det`'s gradient needs at singular matrices;
//! - [`inverse`]: inverses and scaled inverse transposes from the factors;
//! - [`backward`]: the VJP of the factorisation;
//! - [`fused`]: factorise and solve in one pass, the factors saved for the solve's
//!   backward;
//! - [`wide`]: the AVX-512 kernels of all of these for groups of 4 x 4 matrices (x86-64);
//! - [`nopivot`]: LU without pivoting.
//!
//! Batches of small square matrices (`n <=` `LANES_MAX`, at least `LANES` of them) run
//! `LANES` at a time, one matrix per SIMD lane ([`factor_lanes`](factor::factor_lanes),
//! `solve::solve_lanes`, [`middle_lanes`](backward::middle_lanes)), with
//! the operations of the one-matrix loops in their order. Where the factors only feed a
//! following step, fused passes keep them in the lanes: [`lu_inv`] (factorise and
//! invert) and [`lu_factor_solve`] (factorise and solve, the factors saved in lane order
//! for the solve's backward, [`lu_solve_saved`]).

mod backward;
mod det;
mod factor;
mod fused;
mod inverse;
mod nopivot;
mod solve;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod wide;

pub(crate) use backward::lu_factor_backward;
pub(crate) use det::{cofactor_flagged, lu_det};
use det::{DetOut, DetSpec};
pub(crate) use factor::lu_factor;
pub(crate) use fused::{lu_factor_solve, lu_solve_saved};
pub(crate) use inverse::{lu_inv, lu_inv_t};
pub(crate) use nopivot::lu_factor_nopivot;
pub(crate) use solve::lu_solve;

use super::LinalgElem;

/// Work per matrix above which faer may use both threads.
const PAR_WORK: usize = 512 * 512 * 512;

/// Rows (or columns) that the lane kernels' substitutions finish together
/// ([`factor_lanes_n`](factor::factor_lanes_n)'s columns of the factors,
/// `backward::middle_lanes_n`'s `W` and `Z`): their sums stay in
/// registers, and each factor entry is loaded once for all of them.
const ROWS: usize = 4;

/// The AVX-512 kernels of [`wide`] for the whole lane groups of 4 x 4 matrices of the
/// LU paths, where the element type (`f64`) and the CPU allow them: each gives the
/// outputs of the lane kernel it stands in for, bit for bit, or declines (`None` or
/// `false`, having written nothing) where it does not apply. A trait because the kernels
/// exist for `f64` alone and the LU paths are generic over the element type.
pub(crate) trait WideLu: Copy {
    /// The whole lane groups of one task of [`lu_factor_solve`] with `n = 4` (`a`: the
    /// matrices' contiguous column-major blocks; `b`: their `4 x k` right-hand sides, the
    /// same way; the outputs as `fused::factor_solve_lanes` writes them, group after group) by
    /// the AVX-512 kernel of [`wide`], where the element type (`f64`) and the CPU allow
    /// it: the same outputs. Returns the groups it left unwritten (a lane with a zero
    /// pivot or a factor that is not finite), for the portable kernel; `None`, having
    /// written nothing, where it does not apply.
    #[allow(clippy::too_many_arguments)]
    fn factor_solve_wide(
        _a: &[Self],
        _b: &[Self],
        _k: usize,
        _adjoint: bool,
        _factors: &mut [Self],
        _perms: &mut [i64],
        _info: &mut [i64],
        _x: &mut [Self],
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_solve_saved`] with `n = 4` (the saved
    /// factors and interchanges of the groups; `b` and `y`: the contiguous column-major
    /// `4 x k` blocks of the right-hand sides, or `Err` of the one value of a broadcast
    /// scalar, and of the outer products' other operand; the outputs as that function
    /// writes them) by the AVX-512 kernel of [`wide`], where the element type (`f64`)
    /// and the CPU allow it: the same outputs. `false`, having written nothing, where it
    /// does not apply.
    #[allow(clippy::too_many_arguments)]
    fn solve_saved_wide(
        _factors: &[Self],
        _perms: &[i64],
        _b: Result<&[Self], Self>,
        _k: usize,
        _adjoint: bool,
        _y: Option<&[Self]>,
        _x: &mut [Self],
        _outer: Option<&mut [Self]>,
    ) -> bool {
        false
    }

    /// The whole lane groups of one range of [`lu_factor_impl`](factor::lu_factor_impl)
    /// with `n = 4` (`a`: the matrices' contiguous column-major blocks; the outputs as that
    /// function writes them, with each matrix's determinant into `det`) by the AVX-512
    /// kernel of [`wide`], where the element type (`f64`) and the CPU allow it: the same
    /// outputs as [`factor_lanes`](factor::factor_lanes). Returns the groups it left
    /// unwritten, for the portable kernel; `None`, having written nothing, where it does
    /// not apply.
    fn factor_wide(
        _a: &[Self],
        _factors: &mut [Self],
        _ipiv: &mut [i64],
        _info: &mut [i64],
        _det: Option<(&mut DetOut<'_, Self>, DetSpec)>,
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_middle`](backward::lu_middle)'s scaled
    /// inverses with `n = 4` (the packed factors, 1-based interchanges and scales of its
    /// matrices; the results' blocks, row-major if `row_major`) by the AVX-512 kernel of
    /// [`wide`], where the element type and the CPU allow it: the same results as
    /// [`middle_lanes`](backward::middle_lanes). Returns the groups it left unwritten;
    /// `None`, having written nothing, where it does not apply.
    fn inv_t_wide(
        _factors: &[Self],
        _ipiv: &[i64],
        _c: &[Self],
        _out: &mut [Self],
        _row_major: bool,
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_inv`] with `n = 4` (`a`: the contiguous
    /// column-major blocks it factorises) by the AVX-512 kernel of [`wide`], where the
    /// element type and the CPU allow it: the same inverses and `info` as its lane
    /// kernel. Returns the groups it left unwritten; `None`, having written nothing,
    /// where it does not apply.
    fn invert_wide(_a: &[Self], _out: &mut [Self], _info: &mut [i64]) -> Option<Vec<usize>> {
        None
    }
}

impl WideLu for f32 {}

impl WideLu for f64 {
    #[cfg(target_arch = "x86_64")]
    fn factor_solve_wide(
        a: &[f64],
        b: &[f64],
        k: usize,
        adjoint: bool,
        factors: &mut [f64],
        perms: &mut [i64],
        info: &mut [i64],
        x: &mut [f64],
    ) -> Option<Vec<usize>> {
        let run = wide::Run { a, b, k, adjoint, factors, perms, info, x };
        wide::factor_solve(run)
    }

    #[cfg(target_arch = "x86_64")]
    fn solve_saved_wide(
        factors: &[f64],
        perms: &[i64],
        b: Result<&[f64], f64>,
        k: usize,
        adjoint: bool,
        y: Option<&[f64]>,
        x: &mut [f64],
        outer: Option<&mut [f64]>,
    ) -> bool {
        let b = b.map_or_else(wide::Rhs::Splat, wide::Rhs::Blocks);
        let run = wide::SavedRun { factors, perms, b, k, adjoint, y, x, outer };
        wide::solve_saved(run)
    }

    #[cfg(target_arch = "x86_64")]
    fn factor_wide(
        a: &[f64],
        factors: &mut [f64],
        ipiv: &mut [i64],
        info: &mut [i64],
        det: Option<(&mut DetOut<'_, f64>, DetSpec)>,
    ) -> Option<Vec<usize>> {
        wide::factor_det(wide::FactorRun { a, factors, ipiv, info, det })
    }

    #[cfg(target_arch = "x86_64")]
    fn inv_t_wide(
        factors: &[f64],
        ipiv: &[i64],
        c: &[f64],
        out: &mut [f64],
        row_major: bool,
    ) -> Option<Vec<usize>> {
        wide::inv_t(wide::InvRun { factors, ipiv, c, out, row_major })
    }

    #[cfg(target_arch = "x86_64")]
    fn invert_wide(a: &[f64], out: &mut [f64], info: &mut [i64]) -> Option<Vec<usize>> {
        wide::invert(wide::InvertRun { a, out, info })
    }
}

/// Applies the interchanges `ipiv` (1-based) to the rows of the column-major `x`
/// (`n x k`), forward (`Pᵀ x`) or backward (`P x`).
fn swap_rows<T: Copy>(x: &mut [T], n: usize, k: usize, ipiv: &[i64], forward: bool) {
    let mut one = |j: usize| {
        let p = (ipiv[j] - 1) as usize;
        if p != j {
            for c in 0..k {
                x.swap(c * n + j, c * n + p);
            }
        }
    };
    if forward {
        (0..ipiv.len()).for_each(&mut one);
    } else {
        (0..ipiv.len()).rev().for_each(&mut one);
    }
}

/// `Σ a_i b_i` over the common length, with four partial sums (no serial chain of
/// dependent additions).
#[inline(always)]
fn dot<T: LinalgElem>(a: &[T], b: &[T]) -> T {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut acc = [T::ZERO; 4];
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for t in 0..4 {
            acc[t] += x[t] * y[t];
        }
    }
    let tail = len - len % 4;
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (&x, &y) in a[tail..].iter().zip(&b[tail..]) {
        s += x * y;
    }
    s
}
