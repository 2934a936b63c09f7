//! `linalg.cholesky`, `linalg.cholesky_ex`, `cholesky_solve`, `cholesky_inverse`.

use cotangent::linalg::{self, Uplo};
use cotangent::Tensor;

use crate::dispatch::{one, Args, Attrs, Res};

fn uplo(at: &Attrs<'_>) -> Res<Uplo> {
    Ok(if at.bool_or("upper", false)? { Uplo::Upper } else { Uplo::Lower })
}

/// `linalg.cholesky(A, *, upper=False)`.
pub(crate) fn cholesky(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::cholesky(a.t(0)?, uplo(at)?))
}

/// `linalg.cholesky_ex(A, *, upper=False, check_errors=False)`: `[L, info]`;
/// `check_errors=True` raises as `linalg.cholesky` does.
pub(crate) fn cholesky_ex(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let uplo = uplo(at)?;
    if at.bool_or("check_errors", false)? {
        linalg::cholesky(a.t(0)?, uplo)?;
    }
    let r = linalg::cholesky_ex(a.t(0)?, uplo)?;
    Ok(vec![r.l, r.info])
}

/// `cholesky_solve(B, L, upper=False)`.
pub(crate) fn cholesky_solve(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    one(linalg::cholesky_solve(a.t(0)?, a.t(1)?, uplo(at)?))
}

/// `cholesky_inverse(L, upper=False)`.
pub(crate) fn cholesky_inverse(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::cholesky_inverse(a.t(0)?, uplo(at)?))
}
