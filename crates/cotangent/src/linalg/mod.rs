//! Linear algebra (`torch.linalg` and its neighbours), batched over leading dims and
//! differentiable to any order.
//!
//! | op | kind | gradient |
//! |---|---|---|
//! | [`Tensor::matmul`](crate::Tensor::matmul) | primitive (faer GEMM, direct loops for small matrices) | `gA = G Bᵀ`, `gB = Aᵀ G` |
//! | [`Tensor::mm`](crate::Tensor::mm), [`Tensor::bmm`](crate::Tensor::bmm), [`Tensor::mv`](crate::Tensor::mv), [`Tensor::dot`](crate::Tensor::dot), [`Tensor::vdot`](crate::Tensor::vdot) | views around `matmul` | inherited |
//! | [`Tensor::inner`](crate::Tensor::inner), [`Tensor::outer`](crate::Tensor::outer), [`Tensor::vecdot`](crate::Tensor::vecdot), [`Tensor::multi_dot`](crate::Tensor::multi_dot) (optimal chain order) | implicit composites | inherited |
//! | [`Tensor::addmm`](crate::Tensor::addmm), [`Tensor::addbmm`](crate::Tensor::addbmm), [`Tensor::baddbmm`](crate::Tensor::baddbmm), [`Tensor::addmv`](crate::Tensor::addmv), [`Tensor::addr`](crate::Tensor::addr) | `β·self + α·product` | inherited; `β = 0` ignores `self` (NaN too) and gives it a zero gradient |
//! | [`Tensor::linear`](crate::Tensor::linear) | `x Wᵀ + b`, `Wᵀ` a view | inherited |
//! | [`Tensor::kron`](crate::Tensor::kron), [`Tensor::trace`](crate::Tensor::trace), [`Tensor::diag`](crate::Tensor::diag), [`Tensor::diag_embed`](crate::Tensor::diag_embed), [`Tensor::tril`](crate::Tensor::tril), [`Tensor::triu`](crate::Tensor::triu) | views, scatters and masks | inherited |
//! | [`cholesky`], [`cholesky_ex`] | primitive (direct loop for small `n`, faer above) | symmetric `gA = L⁻ᵀ Φ*(Lᵀ gL) L⁻¹` |
//! | [`cholesky_solve`], [`cholesky_inverse`] | explicit composites (triangular solves) | PyTorch's full-matrix gradient for the factor |
//! | [`Tensor::cross`](crate::Tensor::cross), [`Tensor::vander`](crate::Tensor::vander), [`Tensor::matrix_power`](crate::Tensor::matrix_power) (`n < 0` through `inv`) | implicit composites | inherited |
//! | [`lu_factor`], [`lu_factor_ex`] (`pivot`) | primitive (LU with partial pivoting: allocation-free loop for small matrices, faer above; without pivoting: our blocked right-looking loop) | PyTorch's `linalg_lu_backward` (square, wide, tall; `P = I` without pivoting) |
//! | [`lu`], [`lu_unpack`] | implicit composites of `lu_factor_ex`, `tril`, `triu` | inherited; `P` has none |
//! | [`ldl_factor`], [`ldl_factor_ex`] (`hermitian`) | primitive (Bunch–Kaufman, LAPACK `sytf2`'s pivots) | none (`NotDifferentiable`, as PyTorch) |
//! | [`ldl_solve`] | primitive (LAPACK `sytrs`) | w.r.t. `B`: `A⁻¹ G`; w.r.t. `LD`: none (`NotDifferentiable`) |
//! | [`lu_solve`] | primitive | `gB` a solve with the same factors, `gLU` through `A = P L U` |
//! | [`solve`], [`solve_ex`], [`inv`], [`inv_ex`] | explicit composites (one LU, one solve) | `gB = A⁻ᵀ G` reusing the factors, `gA = −gB Xᵀ`; `gA = −Xᵀ G Xᵀ` |
//! | [`det`], [`slogdet`] | explicit composites (one LU) | `g det(A) A⁻ᵀ`, by an SVD at singular matrices; `g A⁻ᵀ` |
//! | [`logdet`] | implicit composite of `slogdet` | inherited |
//! | [`tensorinv`], [`tensorsolve`] | implicit composites of `inv` / `solve` and reshapes | inherited |
//! | [`qr()`] (`Reduced`, `Complete`, `R`) | primitive (Householder: own loops for small matrices, faer blocked above) | `gA = (gQ + Q Φ*(gR Rᵀ − Qᵀ gQ)) R⁻ᵀ` (wide: `A = [X \| Y]`); none for `R` mode and complete tall |
//! | [`householder_product`] | implicit composite (compact WY form, `T` by a unit triangular solve) | inherited; zero on and above the diagonal of `v` |
//! | [`svd()`] (`full_matrices`), [`svdvals`] | primitive (one-sided Jacobi up to 8 x 8, and 16 x 16 in batches (8 matrices in SIMD lanes), LAPACK's `gesdd` stages (our own) above; sign gauge: largest entry of each column of `U` positive) | PyTorch's `svd_backward` (tall, wide, square); `U diag(gS) Vh` for `S` only (no gaps); `NotDifferentiable` at a zero gap where the loss depends on the basis |
//! | [`pinv`] (`atol`, `rtol`, `hermitian`) | explicit composite (SVD under no-grad) | PyTorch's `pinv_backward` in tensor ops |
//! | [`matrix_rank`] | singular values above the tolerance | none (`I64`) |
//! | [`polar`] | primitive through the SVD (`U = W Vᴴ`, `H = V S Vᴴ`) | through the Sylvester equation of `UᴴdU`'s skew part (no gaps); full column rank |
//! | [`lstsq`] (`rcond`, `driver`) | explicit composite (QR/LQ for `Gels`, the SVD for `Gelsy`, `Gelsd`, `Gelss`) | of the solution: `pinv(A) B`'s (PyTorch's); of the residuals: `2 R diag(g) Xᵀ`, `−2 R diag(g)` |
//! | [`vector_norm`] (every `ord`: `2`, `1`, `±inf`, `0`, any `p`) | explicit composite (one reduction kernel: plain multiply-adds, rescaled only on overflow/underflow) | PyTorch's `norm_backward`: 0 at `x = 0`, ties of `±inf` share evenly, none for `0` |
//! | [`matrix_norm`] (`Fro`, `Nuc`, `±1`, `±2`, `±inf`), [`norm`] | implicit composites of `vector_norm`, `amax`/`amin` and the singular values | inherited (the spectral orders gap-free, through `svdvals`) |
//! | [`cond`] (every `p`) | implicit composite: `σ_max/σ_min`, or `‖A‖ ‖A⁻¹‖` through `inv_ex` (`inf` when singular) | inherited, for every `p` |
//! | [`eigh`] (`Uplo`), [`eigvalsh`] | primitive (Jacobi for `n <= 4`, tridiagonal QL to 16, batches 8 matrices at a time in SIMD lanes with the same bits; above, root-free tridiagonal QL for eigenvalues alone, tridiagonal QR with vectors below 128, own divide and conquer with vectors from 128); eigenvector signs: largest component positive | `gA = V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ`, `F_ij = 1/(w_j − w_i)`; eigvalsh `V diag(gw) Vᵀ` (no gaps); `NotDifferentiable` for basis-dependent losses at repeated eigenvalues |
//! | [`eig`], [`eigvals`] | primitive (faer's complex Schur-based solver; real input as complex; complex outputs; eigenvectors of unit norm, largest component real positive) | `gA = V⁻ᴴ (diag(gw) + X / Ē) Vᴴ` (PyTorch's); `NotDifferentiable` for phase-dependent losses and basis-dependent ones at repeated eigenvalues |
//! | [`matrix_exp`] | primitive (scaling and squaring, Padé degree 3–13 by the 1-norm) | `gA = [exp([[Aᵀ, G], [0, Aᵀ]])]₁₂` on `n x n` blocks (any order) |
//! | [`matrix_sqrth`] | primitive through `eigh` (`V diag(√w) Vᵀ`, the lower triangle read) | the Sylvester equation's `V [(Vᵀ G V) / (√w_i + √w_j)] Vᵀ` (no gaps) |
//!
//! bf16 and f16 inputs are computed in f32 and rounded back (results and gradients in the
//! input dtype). Complex inputs (c64, c128) are taken by every op above except `ldl_*` (not
//! yet), with conjugate transposes where the real formulas
//! transpose and PyTorch's gradient convention.

mod cholesky;
mod det;
mod eig;
mod eigh;
mod ldl;
mod lstsq;
mod lu;
mod matmul;
mod matrix_fn;
mod matrix_sqrth;
mod norms;
mod pinv;
mod polar;
mod products;
mod qr;
mod solve;
mod spectral_jvp;
mod structure;
mod svd;
mod triangular;
pub(crate) mod util;

pub use cholesky::{cholesky, cholesky_ex, cholesky_inverse, cholesky_solve, CholeskyEx};
pub use det::{det, logdet, slogdet, Slogdet};
pub use eig::{eig, eigvals, Eig};
pub use eigh::{eigh, eigvalsh, Eigh};
pub use ldl::{ldl_factor, ldl_factor_ex, ldl_solve, LdlFactor, LdlFactorEx};
pub use lstsq::{lstsq, Lstsq, LstsqDriver, LstsqOptions};
pub use lu::{lu, lu_factor, lu_factor_ex, lu_solve, lu_unpack, Lu, LuFactor, LuFactorEx};
pub use matrix_fn::matrix_exp;
pub use matrix_sqrth::matrix_sqrth;
pub use norms::{cond, matrix_norm, norm, vector_norm, NormOrd};
pub use pinv::{matrix_rank, pinv, PinvOptions};
pub use polar::{polar, Polar};
pub use qr::{householder_product, qr, Qr, QrMode};
pub use solve::{inv, inv_ex, solve, solve_ex, tensorinv, tensorsolve, InvEx, SolveEx};
pub use svd::{svd, svdvals, Svd, SvdOptions};
pub use triangular::solve_triangular;

/// Which triangle of a matrix an op reads or returns (PyTorch's `upper=` / `UPLO=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Uplo {
    /// The lower triangle (PyTorch's default for `cholesky`, `eigh`).
    Lower,
    /// The upper triangle.
    Upper,
}

impl Uplo {
    /// The other triangle (the one a transpose reads).
    #[must_use]
    pub(crate) fn flip(self) -> Uplo {
        match self {
            Uplo::Lower => Uplo::Upper,
            Uplo::Upper => Uplo::Lower,
        }
    }
}

/// Which side of the unknown a matrix multiplies (PyTorch's `left=`): `Left` solves
/// `A X = B`, `Right` solves `X A = B`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// `A X = B` (PyTorch's default, `left=True`).
    Left,
    /// `X A = B` (`left=False`).
    Right,
}

/// Whether a triangular matrix's diagonal is read or taken as ones (PyTorch's
/// `unitriangular=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Diag {
    /// The diagonal is read (the default).
    NonUnit,
    /// The diagonal is taken as ones and not read (`unitriangular=True`).
    Unit,
}
