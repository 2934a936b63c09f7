//! The LU family: `linalg.lu_factor`, `linalg.lu_factor_ex`, `linalg.lu`, `lu_unpack`,
//! `linalg.lu_solve`, `linalg.solve`, `linalg.solve_ex`, `linalg.inv`, `linalg.inv_ex`,
//! `linalg.det`, `linalg.slogdet`, `logdet`.

use cotangent::linalg::{self, Side};
use cotangent::Tensor;

use crate::dispatch::{guard, one, Args, Attrs, Fail, Res};
use crate::Kind;

/// `pivot` (default true); `pivot=False` is LU without interchanges (PyTorch computes it
/// on CUDA only).
fn pivot(at: &Attrs<'_>) -> Res<bool> {
    at.bool_or("pivot", true)
}

fn side(at: &Attrs<'_>) -> Res<Side> {
    Ok(if at.bool_or("left", true)? { Side::Left } else { Side::Right })
}

/// `linalg.lu_factor(A, *, pivot=True)` -> (LU, pivots).
pub(crate) fn lu_factor(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let f = linalg::lu_factor(a.t(0)?, pivot(at)?)?;
    Ok(vec![f.lu, f.pivots])
}

/// `linalg.lu_factor_ex(A, *, pivot=True, check_errors=False)` -> (LU, pivots, info).
pub(crate) fn lu_factor_ex(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let p = pivot(at)?;
    let f = if at.bool_or("check_errors", false)? {
        let f = linalg::lu_factor(a.t(0)?, p)?;
        let info = linalg::lu_factor_ex(a.t(0)?, p)?.info;
        linalg::LuFactorEx { lu: f.lu, pivots: f.pivots, info }
    } else {
        linalg::lu_factor_ex(a.t(0)?, p)?
    };
    Ok(vec![f.lu, f.pivots, f.info])
}

/// Refuses a permutation matrix `(*, m, m)` of `t: (*, m, n)` beyond the size limit.
fn guard_p(op: &str, t: &Tensor) -> Res<()> {
    let r = t.rank();
    if r >= 2 {
        let mut dims = t.dims()[..r - 1].to_vec();
        dims.push(t.dims()[r - 2]);
        guard(op, &dims)?;
    }
    Ok(())
}

/// `linalg.lu(A, *, pivot=True)` -> (P, L, U).
pub(crate) fn lu(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let p = pivot(at)?;
    if p {
        guard_p("linalg.lu", a.t(0)?)?;
    }
    let f = linalg::lu(a.t(0)?, p)?;
    Ok(vec![f.p, f.l, f.u])
}

/// `lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True)` -> (P, L, U).
pub(crate) fn lu_unpack(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    if !at.bool_or("unpack_data", true)? || !at.bool_or("unpack_pivots", true)? {
        return Err(Fail::Kind(
            Kind::Unsupported,
            "lu_unpack: unpack_data=False and unpack_pivots=False (empty outputs) are not \
             supported"
                .into(),
        ));
    }
    guard_p("lu_unpack", a.t(0)?)?;
    let f = linalg::lu_unpack(a.t(0)?, a.t(1)?)?;
    Ok(vec![f.p, f.l, f.u])
}

/// `linalg.lu_solve(LU, pivots, B, *, left=True, adjoint=False)`.
pub(crate) fn lu_solve(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(3, 3)?;
    let adjoint = at.bool_or("adjoint", false)?;
    one(linalg::lu_solve(a.t(0)?, a.t(1)?, a.t(2)?, side(at)?, adjoint))
}

/// `linalg.solve(A, B, *, left=True)`.
pub(crate) fn solve(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    one(linalg::solve(a.t(0)?, a.t(1)?, side(at)?))
}

/// `linalg.solve_ex(A, B, *, left=True, check_errors=False)` -> (result, info).
pub(crate) fn solve_ex(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    let s = side(at)?;
    if at.bool_or("check_errors", false)? {
        linalg::solve(a.t(0)?, a.t(1)?, s)?;
    }
    let r = linalg::solve_ex(a.t(0)?, a.t(1)?, s)?;
    Ok(vec![r.result, r.info])
}

/// `linalg.inv(A)`.
pub(crate) fn inv(a: &Args<'_>, _at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::inv(a.t(0)?))
}

/// `linalg.inv_ex(A, *, check_errors=False)` -> (inverse, info).
pub(crate) fn inv_ex(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    if at.bool_or("check_errors", false)? {
        linalg::inv(a.t(0)?)?;
    }
    let r = linalg::inv_ex(a.t(0)?)?;
    Ok(vec![r.inverse, r.info])
}

/// `linalg.det(A)`.
pub(crate) fn det(a: &Args<'_>, _at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::det(a.t(0)?))
}

/// `linalg.slogdet(A)` -> (sign, logabsdet).
pub(crate) fn slogdet(a: &Args<'_>, _at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let s = linalg::slogdet(a.t(0)?)?;
    Ok(vec![s.sign, s.logabsdet])
}

/// `logdet(A)`.
pub(crate) fn logdet(a: &Args<'_>, _at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::logdet(a.t(0)?))
}

/// `linalg.tensorinv(A, ind=2)`.
pub(crate) fn tensorinv(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let ind = at.int("ind")?.unwrap_or(2);
    let ind = usize::try_from(ind).map_err(|_| {
        Fail::Kind(
            Kind::InvalidArgument,
            format!("linalg.tensorinv: ind must be a strictly positive integer, got {ind}"),
        )
    })?;
    one(linalg::tensorinv(a.t(0)?, ind))
}

/// `linalg.tensorsolve(A, B, dims=None)`.
pub(crate) fn tensorsolve(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    let dims: Option<Vec<isize>> =
        at.ints("dims")?.map(|d| d.into_iter().map(|v| v as isize).collect());
    one(linalg::tensorsolve(a.t(0)?, a.t(1)?, dims.as_deref()))
}
