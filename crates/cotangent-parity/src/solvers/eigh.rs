//! `linalg.eigh`, `linalg.eigvalsh`, `linalg.eig`, `linalg.eigvals` and
//! `linalg.matrix_exp`, `linalg.matrix_sqrth`.

use cotangent::linalg::{self, Uplo};
use cotangent::Tensor;

use crate::dispatch::{one, Args, Attrs, Fail, Res};
use crate::Kind;

/// PyTorch's `UPLO=` (`'L'`, the default, or `'U'`, either case).
fn uplo(op: &str, at: &Attrs<'_>) -> Res<Uplo> {
    match at.string("UPLO")? {
        None | Some("L" | "l") => Ok(Uplo::Lower),
        Some("U" | "u") => Ok(Uplo::Upper),
        Some(other) => Err(Fail::Kind(
            Kind::InvalidArgument,
            format!("{op}: UPLO must be \"L\" or \"U\", got {other:?}"),
        )),
    }
}

/// `linalg.eigh(A, UPLO='L')`: outputs `(eigenvalues, eigenvectors)`.
pub(crate) fn eigh(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let e = linalg::eigh(a.t(0)?, uplo("linalg.eigh", at)?)?;
    Ok(vec![e.eigenvalues, e.eigenvectors])
}

/// `linalg.eigvalsh(A, UPLO='L')`.
pub(crate) fn eigvalsh(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::eigvalsh(a.t(0)?, uplo("linalg.eigvalsh", at)?))
}

/// `linalg.eig(A)`: outputs `(eigenvalues, eigenvectors)`, complex.
pub(crate) fn eig(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let e = linalg::eig(a.t(0)?)?;
    Ok(vec![e.eigenvalues, e.eigenvectors])
}

/// `linalg.eigvals(A)`, complex.
pub(crate) fn eigvals(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::eigvals(a.t(0)?))
}

/// `linalg.matrix_sqrth(A)`.
pub(crate) fn matrix_sqrth(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::matrix_sqrth(a.t(0)?))
}

/// `linalg.matrix_exp(A)`.
pub(crate) fn matrix_exp(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::matrix_exp(a.t(0)?))
}
