//! `linalg.qr` and `linalg.householder_product`.

use cotangent::linalg::{self, QrMode};
use cotangent::Tensor;

use crate::dispatch::{one, Args, Attrs, Fail, Res};
use crate::Kind;

/// `linalg.qr(A, mode='reduced')`: outputs `(Q, R)`; `Q` is empty `(0,)` with `mode='r'`.
pub(crate) fn qr(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let mode = match at.string("mode")? {
        None | Some("reduced") => QrMode::Reduced,
        Some("complete") => QrMode::Complete,
        Some("r") => QrMode::R,
        Some(other) => {
            return Err(Fail::Kind(
                Kind::InvalidArgument,
                format!(
                    "linalg.qr: unknown mode {other:?}; expected \"reduced\", \"complete\" or \"r\""
                ),
            ))
        }
    };
    let f = linalg::qr(a.t(0)?, mode)?;
    Ok(vec![f.q, f.r])
}

/// `linalg.householder_product(A, tau)`.
pub(crate) fn householder_product(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(2, 2)?;
    one(linalg::householder_product(a.t(0)?, a.t(1)?))
}
