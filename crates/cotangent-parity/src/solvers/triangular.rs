//! `linalg.solve_triangular`.

use cotangent::linalg::{self, Diag, Side, Uplo};
use cotangent::Tensor;

use crate::dispatch::{one, Args, Attrs, Res};

/// `linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False)`.
pub(crate) fn solve_triangular(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    let uplo = if at.req_bool("upper")? { Uplo::Upper } else { Uplo::Lower };
    let side = if at.bool_or("left", true)? { Side::Left } else { Side::Right };
    let diag = if at.bool_or("unitriangular", false)? { Diag::Unit } else { Diag::NonUnit };
    one(linalg::solve_triangular(a.t(0)?, a.t(1)?, uplo, side, diag))
}
