//! `linalg.svd`, `linalg.svdvals`, `linalg.polar`, `linalg.pinv`, `linalg.matrix_rank`,
//! `linalg.lstsq`.

use cotangent::linalg::{self, LstsqDriver};
use cotangent::Tensor;

use crate::dispatch::{guard, one, Args, Attrs, Fail, Res};
use crate::Kind;

/// `linalg.svd(A, full_matrices=True)`: outputs `(U, S, Vh)`, in the library's sign gauge.
pub(crate) fn svd(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let full = at.bool_or("full_matrices", true)?;
    let x = a.t(0)?;
    if full && x.rank() >= 2 {
        // U (*, m, m) and Vh (*, n, n)
        let r = x.rank();
        for side in [x.dims()[r - 2], x.dims()[r - 1]] {
            let mut dims = x.dims()[..r - 2].to_vec();
            dims.extend([side, side]);
            guard("linalg.svd", &dims)?;
        }
    }
    let f = linalg::svd(x, full)?;
    Ok(vec![f.u, f.s, f.vh])
}

/// `linalg.polar(A)`: outputs `(U, H)`.
pub(crate) fn polar(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let p = linalg::polar(a.t(0)?)?;
    Ok(vec![p.u, p.h])
}

/// `linalg.svdvals(A)`.
pub(crate) fn svdvals(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::svdvals(a.t(0)?))
}

/// `linalg.pinv(A, atol=None, rtol=None, hermitian=False)`.
pub(crate) fn pinv(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let (atol, rtol) = (at.float("atol")?, at.float("rtol")?);
    one(linalg::pinv(
        a.t(0)?,
        linalg::PinvOptions { atol, rtol, hermitian: at.bool_or("hermitian", false)? },
    ))
}

/// `linalg.matrix_rank(A, atol=None, rtol=None, hermitian=False)`.
pub(crate) fn matrix_rank(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let (atol, rtol) = (at.float("atol")?, at.float("rtol")?);
    one(linalg::matrix_rank(
        a.t(0)?,
        linalg::PinvOptions { atol, rtol, hermitian: at.bool_or("hermitian", false)? },
    ))
}

/// `linalg.lstsq(A, B, rcond=None, driver=None)`: outputs `(solution, residuals, rank,
/// singular_values)`.
pub(crate) fn lstsq(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    let driver = match at.string("driver")? {
        None => None,
        Some("gels") => Some(LstsqDriver::Gels),
        Some("gelsy") => Some(LstsqDriver::Gelsy),
        Some("gelsd") => Some(LstsqDriver::Gelsd),
        Some("gelss") => Some(LstsqDriver::Gelss),
        Some(other) => {
            return Err(Fail::Kind(
                Kind::InvalidArgument,
                format!(
                    "linalg.lstsq: unknown driver {other:?}; expected one of \"gels\", \"gelsy\", \
                     \"gelsd\", \"gelss\""
                ),
            ))
        }
    };
    let r = linalg::lstsq(
        a.t(0)?,
        a.t(1)?,
        linalg::LstsqOptions { rcond: at.float("rcond")?, driver },
    )?;
    Ok(vec![r.solution, r.residuals, r.rank, r.singular_values])
}
