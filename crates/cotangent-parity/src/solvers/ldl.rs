//! The Bunch–Kaufman family: `linalg.ldl_factor`, `linalg.ldl_factor_ex`,
//! `linalg.ldl_solve`.

use cotangent::linalg;
use cotangent::Tensor;

use crate::dispatch::{one, Args, Attrs, Res};

/// `linalg.ldl_factor(A, *, hermitian=False)` -> (LD, pivots).
pub(crate) fn ldl_factor(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let f = linalg::ldl_factor(a.t(0)?, at.bool_or("hermitian", false)?)?;
    Ok(vec![f.ld, f.pivots])
}

/// `linalg.ldl_factor_ex(A, *, hermitian=False, check_errors=False)` -> (LD, pivots, info).
pub(crate) fn ldl_factor_ex(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let h = at.bool_or("hermitian", false)?;
    if at.bool_or("check_errors", false)? {
        linalg::ldl_factor(a.t(0)?, h)?;
    }
    let f = linalg::ldl_factor_ex(a.t(0)?, h)?;
    Ok(vec![f.ld, f.pivots, f.info])
}

/// `linalg.ldl_solve(LD, pivots, B, *, hermitian=False)`.
pub(crate) fn ldl_solve(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(3, 3)?;
    one(linalg::ldl_solve(a.t(0)?, a.t(1)?, a.t(2)?, at.bool_or("hermitian", false)?))
}
