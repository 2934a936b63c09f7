//! The backend seam: kernels only (no autograd, no broadcasting policy, no dtype
//! promotion; those live above, in the tensor ops). [`Storage`] is the only place that
//! matches on the device; each device implements [`BackendStorage`].

pub(crate) mod cpu;
mod storage;

use crate::complex::ComplexFloat;
use crate::device::Device;
use crate::dtype::{DType, Float};
use crate::error::Result;
use crate::host::HostBuffer;
use crate::layout::Layout;
use crate::shape::Shape;
pub(crate) use cpu::CpuStorage;
pub(crate) use storage::Storage;

/// An elementwise function of one real argument, computed at the dtype's precision
/// (`f32` for the 16-bit types). `NAME` is the op's name, which a device without a
/// compiled kernel reports in `Error::Unsupported`.
pub(crate) trait UnaryKernel: Copy + Send + Sync {
    const NAME: &'static str;
    fn f<T: Float>(self, x: T) -> T;
    /// Whether the op is defined on complex numbers, as [`UnaryKernel::c`]; a device
    /// refuses complex input of an op without it (`UnsupportedDType`).
    const COMPLEX: bool = false;
    /// The function of one complex argument; called only where `COMPLEX`.
    #[inline(always)]
    fn c<C: ComplexFloat>(self, z: C) -> C {
        z
    }
}

/// An elementwise function of two real arguments (and, where `COMPLEX`, of two complex
/// ones, as [`UnaryKernel`]).
pub(crate) trait BinaryKernel: Copy + Send + Sync {
    const NAME: &'static str;
    fn f<T: Float>(self, a: T, b: T) -> T;
    /// Whether the op is defined on complex numbers, as [`BinaryKernel::c`].
    const COMPLEX: bool = false;
    /// The function of two complex arguments; called only where `COMPLEX`.
    #[inline(always)]
    fn c<C: ComplexFloat>(self, a: C, _b: C) -> C {
        a
    }
}

/// Elementwise comparisons (result `Bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What [`BackendStorage::complex_part`] reads off each complex element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ComplexPart {
    /// The real part.
    Re,
    /// The imaginary part.
    Im,
    /// The modulus `|z|`.
    Abs,
    /// The argument `atan2(im, re)`.
    Angle,
}

/// Reductions over a set of dims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

/// The kernels a device must provide (its primitives; the optional ones are
/// [`FastPaths`]). Every method takes explicit layouts; inputs of binary
/// kernels already have the same shape (broadcast views) and dtype.
pub(crate) trait BackendStorage: Sized {
    fn dtype(&self) -> DType;
    /// A buffer on `device` (one of this backend's) holding the host elements `h`.
    fn from_host(device: Device, h: HostBuffer) -> Result<Self>;
    /// The elements at `l`, in row-major order, in a fresh host buffer.
    fn to_host(&self, l: &Layout) -> Result<HostBuffer>;
    /// The elements at `l`, in row-major order, as `f64` in host memory (real parts of
    /// complex values); the buffer may come from the device's cache of host buffers.
    fn to_host_f64(&self, l: &Layout) -> Result<Vec<f64>>;
    /// The position (in row-major order) and value of the first non-zero element of the
    /// `I64` or `Bool` (as 0 and 1) elements at `l`, read where they lie (a batch's `info`,
    /// a per-matrix flag).
    fn first_nonzero(&self, l: &Layout) -> Result<Option<(usize, i64)>>;
    /// `n` zeros of `dtype` on `device` (one of this backend's).
    fn zeros(device: Device, n: usize, dtype: DType) -> Result<Self>;
    /// Contiguous copy of the elements of `l`, in row-major order.
    fn copy_strided(&self, l: &Layout) -> Result<Self>;
    fn cast(&self, l: &Layout, to: DType) -> Result<Self>;
    fn unary<K: UnaryKernel>(&self, l: &Layout, k: K) -> Result<Self>;
    fn binary<K: BinaryKernel>(&self, l: &Layout, rhs: &Self, rl: &Layout, k: K) -> Result<Self>;
    fn cmp(&self, l: &Layout, rhs: &Self, rl: &Layout, op: CmpOp) -> Result<Self>;
    fn where_cond(&self, l: &Layout, t: &Self, tl: &Layout, f: &Self, fl: &Layout) -> Result<Self>;
    /// The real parts, imaginary parts, moduli or arguments of the complex elements at
    /// `l`, contiguous, in the real dtype of the same precision.
    fn complex_part(&self, l: &Layout, part: ComplexPart) -> Result<Self>;
    /// `re + i im` elementwise, contiguous, from two real buffers of one dtype (`F32`
    /// gives `C64`, `F64` gives `C128`), `self` the real parts at `l` and `im` the
    /// imaginary ones at `il` (a layout of the same shape).
    fn complex(&self, l: &Layout, im: &Self, il: &Layout) -> Result<Self>;
    /// Reduces over `dims` (resolved, distinct); the result has the keepdim shape.
    fn reduce(&self, l: &Layout, dims: &[usize], op: ReduceOp) -> Result<Self>;
    /// A zero buffer of `numel` elements with `self`'s elements (in `src` order) written
    /// (or added, if `accumulate`) at the offsets of `dst` (a layout of the same shape).
    fn scatter_strided(
        &self,
        src: &Layout,
        numel: usize,
        dst: &Layout,
        accumulate: bool,
    ) -> Result<Self>;
    /// The `ord`-norm `(Σ |x|^p)^(1/p)` over `dims` (resolved, distinct; `ord` any order:
    /// `±inf` the largest/smallest magnitude, 0 the count of non-zeros), contiguous with
    /// the keepdim shape; an empty reduction gives 0. f32 and f64.
    fn vector_norm(&self, l: &Layout, dims: &[usize], ord: f64) -> Result<Self>;
    /// The row permutations of 1-based interchanges (LAPACK's `ipiv`): for `self` the `I64`
    /// interchanges `(*, k)` of `m`-row matrices (layout `l`), the contiguous `I64`
    /// `perm: (*, m)` with `(Pᵀ A)[i] = A[perm[i]]`; `InvalidArgument` naming `op` for an
    /// interchange outside `1..=m`.
    fn permutation(&self, l: &Layout, m: usize, op: &'static str) -> Result<Self>;
    /// Concatenation along `dim` of tensors of one dtype into a contiguous `out` shape.
    fn cat(parts: &[(&Self, &Layout)], dim: usize, out: &Shape) -> Result<Self>;
    /// Reverses the given dims.
    fn flip(&self, l: &Layout, dims: &[usize]) -> Result<Self>;
    /// `out[..., i, ...] = self[..., index[..., i, ...], ...]` along `dim`; `index` is `I64`
    /// with the output's shape.
    fn gather(&self, l: &Layout, dim: usize, index: &Self, il: &Layout) -> Result<Self>;
    /// `self` (contiguous copy) with `src[i]` added at `index[i]` along `dim`; index and
    /// src are iterated over `il`'s shape.
    fn scatter_add(
        &self,
        l: &Layout,
        dim: usize,
        index: &Self,
        il: &Layout,
        src: &Self,
        sl: &Layout,
    ) -> Result<Self>;
    /// Batched matrix product of `(*, m, k)` and `(*, k, n)` layouts with equal batch
    /// dims; the result is row-major `(*, m, n)`.
    fn matmul(&self, l: &Layout, rhs: &Self, rl: &Layout) -> Result<Self>;

    // dense linear algebra: operands have equal batch dims and one dtype (f32 or f64);
    // results carry their own layout (column-major matrices where LAPACK's are)

    /// Triangular solve with the `spec.upper` triangle of `self: (*, n, n)`: `A X = B`
    /// (`b: (*, n, k)`) or `X A = B` (`b: (*, k, n)`).
    fn solve_triangular(
        &self,
        l: &Layout,
        b: &Self,
        bl: &Layout,
        spec: TriSolve,
    ) -> Result<(Self, Layout)>;
    /// Cholesky factor of each `self: (*, n, n)`, reading its lower triangle (`L`) or its
    /// upper one (`U = Lᵀ`, if `upper`); with each matrix's LAPACK `info` (0 or the order
    /// of its first non-positive leading minor), I64, contiguous, the batch's shape.
    fn cholesky(&self, l: &Layout, upper: bool) -> Result<(Self, Layout, Self)>;

    /// LU of `self: (*, m, n)`, with partial pivoting (LAPACK `getrf`) or, if `!pivot`,
    /// none (`A = L U`): the packed factors (column-major, with their layout), the 1-based
    /// interchanges `(*, min(m, n))` (`1, 2, ..., k` without pivoting) and `info` `(*)`
    /// (the 1-based index of the first exactly zero pivot, or 0), both `I64` and
    /// contiguous.
    fn lu_factor(&self, l: &Layout, pivot: bool) -> Result<(Self, Layout, Self, Self)>;

    /// The Bunch–Kaufman factorisation `A = P L D Lᵀ Pᵀ` of the lower triangle of square
    /// `self: (*, n, n)` (LAPACK `sytrf`, lower; `A = P L D Lᴴ Pᵀ`, `hetrf`, for complex
    /// input when `hermitian`): the compact factors (column-major, with their layout),
    /// the 1-based pivots `(*, n)` and `info` `(*)`, both `I64` and contiguous.
    fn ldl_factor(&self, l: &Layout, hermitian: bool) -> Result<(Self, Layout, Self, Self)>;

    /// Solves `A X = B` with `A` given by [`BackendStorage::ldl_factor`]'s compact factors
    /// `self: (*, n, n)` (of the same `hermitian`) and contiguous `I64` pivots `piv`
    /// (`(*, n)`, valid); `b: (*, n, k)` has the same batch dims. Column-major result.
    fn ldl_solve(
        &self,
        l: &Layout,
        piv: &Self,
        b: &Self,
        bl: &Layout,
        hermitian: bool,
    ) -> Result<(Self, Layout)>;

    /// [`BackendStorage::lu_factor`] of square `self: (*, n, n)` with each matrix's
    /// determinant read off its factors in the same pass (see [`LuDet`]).
    fn lu_det(&self, l: &Layout, want_log: bool) -> Result<LuDet<Self>>;

    /// Solves `A X = B` (`Aᵀ X = B` if `adjoint`) with `A = P L U` given by packed factors
    /// `self: (*, n, n)` and contiguous `I64` interchanges `piv` (`(*, n)`, in `1..=n`);
    /// `b: (*, n, k)` has the same batch dims. Column-major result.
    fn lu_solve(
        &self,
        l: &Layout,
        piv: &Self,
        b: &Self,
        bl: &Layout,
        adjoint: bool,
    ) -> Result<(Self, Layout)>;

    /// Householder QR of each matrix of `self: (*, m, n)` with LAPACK's sign convention:
    /// `Q` (`None` unless `spec.want_q`) and `R`, with their layouts (see [`QrSpec`]).
    #[allow(clippy::type_complexity)]
    fn qr(&self, l: &Layout, spec: QrSpec) -> Result<(Option<(Self, Layout)>, Self, Layout)>;

    /// The SVD of each matrix of `self: (*, m, n)`: `(U, S, Vh)` with their layouts, `U`
    /// and `Vh` only if `want_uv` (`full`: `(*, m, m)` and `(*, n, n)`, else `(*, m, k)`
    /// and `(*, k, n)`); singular values descending, the sign gauge of
    /// `crate::linalg::svd`. `NoConvergence` for a non-finite matrix.
    #[allow(clippy::type_complexity)]
    fn svd(
        &self,
        l: &Layout,
        want_uv: bool,
        full: bool,
    ) -> Result<(Option<(Self, Layout)>, (Self, Layout), Option<(Self, Layout)>)>;
    /// Eigenvalues (ascending, contiguous `(*, n)`) and, if `vectors`, eigenvectors (a
    /// column-major `(*, n, n)` buffer with its layout, each column's largest component
    /// positive) of each symmetric `self: (*, n, n)`, reading its lower (or, if `upper`,
    /// upper) triangle; with the index of the first matrix not decomposed (a NaN or an
    /// infinity in its triangle), if any.
    #[allow(clippy::type_complexity)]
    fn eigh(
        &self,
        l: &Layout,
        upper: bool,
        vectors: bool,
    ) -> Result<(Self, Option<(Self, Layout)>, Option<usize>)>;

    /// Eigenvalues (complex, contiguous `(*, n)`, unsorted) and, if `vectors`, right
    /// eigenvectors (complex, a column-major `(*, n, n)` buffer with its layout, each of
    /// unit 2-norm with its largest component real and positive) of each square
    /// `self: (*, n, n)`, real or complex; with the index of the first matrix not
    /// decomposed (a NaN or an infinity, or no convergence), if any.
    #[allow(clippy::type_complexity)]
    fn eig(
        &self,
        l: &Layout,
        vectors: bool,
    ) -> Result<(Self, Option<(Self, Layout)>, Option<usize>)>;

    /// `exp(A)` of each square `self: (*, n, n)` (scaling and squaring with Padé
    /// approximants), column-major, with its layout.
    fn matrix_exp(&self, l: &Layout) -> Result<(Self, Layout)>;
}

/// The optional kernels of a device: fused or specialised versions of what the ops also
/// compute as compositions of [`BackendStorage`]'s primitives (most are the first-order
/// VJPs of the factorisations, in one pass and without recording). Each defaults to
/// `Ok(None)`, "not available here", and the op then takes its composition of tensor ops
/// (the recorded, differentiable form, the same values to rounding): a device with only
/// the primitives runs every op and every gradient. `COTANGENT_FAST_PATHS=0` turns them
/// all off on every device ([`fast_paths`]).
pub(crate) trait FastPaths: BackendStorage {
    /// The VJP of [`BackendStorage::vector_norm`] for a finite `ord` other than 0, fused:
    /// `self` is the input (layout `l`), `y` and `g` the output and its cotangent (layouts
    /// of the keepdim shape, `self`'s dtype); the result is contiguous.
    fn vector_norm_backward(
        &self,
        _l: &Layout,
        _dims: &[usize],
        _ord: f64,
        _y: (&Self, &Layout),
        _g: (&Self, &Layout),
    ) -> Result<Option<Self>> {
        Ok(None)
    }

    /// The tangent of the batched product `self · b`: `da · b + self · db` (`self, da:
    /// (*, m, k)`, `b, db: (*, k, n)`, equal batch dims, any strides), row-major, in one
    /// pass; `Ok(None)` where the device has no kernel for the shape.
    fn matmul_jvp(
        &self,
        _l: &Layout,
        _b: (&Self, &Layout),
        _da: (&Self, &Layout),
        _db: (&Self, &Layout),
    ) -> Result<Option<Self>> {
        Ok(None)
    }

    /// `alpha · Xᵀ G Xᵀ` for each square `X` of `self: (*, n, n)` and `G` of `g` (equal
    /// batch dims, any strides): the first-order gradient of the inverse (`alpha = −1`)
    /// in one pass, row-major.
    fn inv_sandwich(
        &self,
        _l: &Layout,
        _g: &Self,
        _gl: &Layout,
        _alpha: f64,
    ) -> Result<Option<Self>> {
        Ok(None)
    }

    /// The VJP of [`BackendStorage::cholesky`] for factors `self: (*, n, n)` and their
    /// cotangent `g`: the symmetric `gA`, fused.
    fn cholesky_backward(
        &self,
        _l: &Layout,
        _g: &Self,
        _gl: &Layout,
        _upper: bool,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// The JVP of [`BackendStorage::cholesky`] for factors `self: (*, n, n)` (`L`, or `U`
    /// if `upper`) and symmetric tangents `da` of `A`: `dL` (or `dU`), fused; `Ok(None)`
    /// where the device has no kernel or some `dA` is not exactly symmetric.
    fn cholesky_jvp(
        &self,
        _l: &Layout,
        _da: &Self,
        _dal: &Layout,
        _upper: bool,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// The inverse of each square matrix whose transpose is `self: (*, n, n)` (layout
    /// `l`), and the `info` of `self`'s LU (`I64`), in one fused pass (column-major
    /// result).
    #[allow(clippy::type_complexity)]
    fn lu_inv(&self, _l: &Layout) -> Result<Option<(Self, Layout, Self)>> {
        Ok(None)
    }

    /// [`BackendStorage::lu_factor`] of square `self: (*, n, n)` (layout `l`) and
    /// [`BackendStorage::lu_solve`] with those factors of `b: (*, n, k)` (the same batch
    /// dims), in one fused pass. The factors are kept in the device's own packing, for
    /// [`FastPaths::lu_solve_saved`], which a device with this kernel must have too.
    fn lu_factor_solve(
        &self,
        _l: &Layout,
        _b: &Self,
        _bl: &Layout,
        _adjoint: bool,
    ) -> Result<Option<LuSolved<Self>>> {
        Ok(None)
    }

    /// [`BackendStorage::lu_solve`] with the factors of order `n` that
    /// [`FastPaths::lu_factor_solve`] returned (`self`: its `factors`, `perms`: its
    /// `perms`), for `b: (*, n, k)` with the factorised batch's dims. Column-major result.
    /// With `outer = Some((y, yl))` (`y: (*, n, k)`, the dims of `b`), also `−X Yᵀ` of
    /// each matrix, `(*, n, n)` row-major: a solve's backward `gA = −gB Xᵀ` from the
    /// pass that computes `gB`. Required where `lu_factor_solve` is available (the op
    /// reaches it only with such factors).
    fn lu_solve_saved(
        &self,
        _perms: &Self,
        _n: usize,
        _b: &Self,
        _bl: &Layout,
        _adjoint: bool,
        _outer: Option<(&Self, &Layout)>,
    ) -> Result<Option<SavedSolve<Self>>> {
        Ok(None)
    }

    /// The VJP of [`BackendStorage::lu_factor`] for square packed factors `self: (*, n, n)`,
    /// their contiguous `I64` interchanges `piv` (`(*, n)`) and the cotangent `g` of the
    /// factors (same batch): `gA`, fused, with its layout.
    fn lu_factor_backward(
        &self,
        _l: &Layout,
        _piv: &Self,
        _g: &Self,
        _gl: &Layout,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// `c_i A_i⁻ᵀ` for each `A = P L U` given by square packed factors `self: (*, n, n)`
    /// and contiguous `I64` interchanges `piv` (`(*, n)`), with one scale per matrix in
    /// `c` (contiguous, the batch's shape), with its layout: row-major for small `n` if
    /// `row_major`, else column-major.
    fn lu_inv_t(
        &self,
        _l: &Layout,
        _piv: &Self,
        _c: &Self,
        _row_major: bool,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// The cofactor matrix of each square `self: (*, n, n)` flagged in `only` (Bool,
    /// contiguous, the batch's shape), zeros for the others (the gradient of `det` at
    /// near-singular matrices), by an SVD, exact at singular matrices; row-major.
    /// [`Flagged::NoneFlagged`] when no matrix is flagged: the device reads its own
    /// flags, so the op never reads them back.
    fn cofactor(&self, _l: &Layout, _only: &Self) -> Result<Option<Flagged<Self>>> {
        Ok(None)
    }

    /// The gradient of a tall or square QR, `self = Q: (*, m, n)`, `r: (*, n, n)`, from
    /// the cotangents (`None` is zero), fused.
    fn qr_backward(
        &self,
        _l: &Layout,
        _r: (&Self, &Layout),
        _gq: Option<(&Self, &Layout)>,
        _gr: Option<(&Self, &Layout)>,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// The gradient of a reduced SVD, `self = U: (*, m, k)`, `s: (*, k)` and
    /// `vh: (*, k, n)`, from the cotangents (`None` is zero; `S`'s contiguous), fused;
    /// `Some(Err(_))` where the VJP has no gradient.
    #[allow(clippy::type_complexity)]
    fn svd_backward(
        &self,
        _l: &Layout,
        _s: &Self,
        _vh: (&Self, &Layout),
        _gu: Option<(&Self, &Layout)>,
        _gs: Option<&Self>,
        _gvh: Option<(&Self, &Layout)>,
    ) -> Result<Option<std::result::Result<(Self, Layout), SvdGradFail>>> {
        Ok(None)
    }

    /// The gradient of [`eigh`](BackendStorage::eigh)'s outputs, `self = V: (*, n, n)`
    /// with the eigenvalues `w: (*, n)`, from the cotangents (`None` is zero), fused:
    /// contiguous `(*, n, n)`, or `Some(Err(Undefined))` where the gradient is undefined
    /// (a cotangent not negligible at a repeated eigenvalue).
    #[allow(clippy::type_complexity)]
    fn eigh_backward(
        &self,
        _l: &Layout,
        _w: (&Self, &Layout),
        _gw: Option<(&Self, &Layout)>,
        _gv: Option<(&Self, &Layout)>,
    ) -> Result<Option<std::result::Result<(Self, Layout), Undefined>>> {
        Ok(None)
    }

    /// The middle factor `diag(gw) + F ∘ skew(X)` of eigh's first-order VJP for
    /// `self = X = VᵀgV: (*, n, n)`, the eigenvalues `w: (*, n)` and their cotangent `gw`
    /// (`None` is zero; layouts of `w`'s shape), `F_ij = 1 / (w_j − w_i)`: contiguous
    /// `(*, n, n)`, or `Some(Err(Undefined))` as [`FastPaths::eigh_backward`].
    fn eigh_inner(
        &self,
        _l: &Layout,
        _w: (&Self, &Layout),
        _gw: Option<(&Self, &Layout)>,
    ) -> Result<Option<std::result::Result<Self, Undefined>>> {
        Ok(None)
    }

    /// The first-order gradient of [`eig`](BackendStorage::eig)'s outputs, `self = V:
    /// (*, n, n)` (complex) with the eigenvalues `w: (*, n)`, from the cotangents (`None`
    /// is zero; not both), fused: contiguous `(*, n, n)`, its real part if `real` (the
    /// input was real). `None` also where the composition must answer (the loss depends
    /// on an eigenvector's phase or on a basis of a repeated eigenvalue's eigenspace, or
    /// `Vᴴ` has a zero pivot): its checks raise the error.
    fn eig_backward(
        &self,
        _l: &Layout,
        _w: (&Self, &Layout),
        _gw: Option<(&Self, &Layout)>,
        _gv: Option<(&Self, &Layout)>,
        _real: bool,
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }

    /// The Fréchet derivative of the exponential, `[exp([[X, E], [0, X]])]₁₂`, for each
    /// `X` of `self: (*, n, n)` and `E` of `e` (the same shape and dtype), column-major,
    /// with its layout.
    fn matrix_exp_frechet(
        &self,
        _l: &Layout,
        _e: (&Self, &Layout),
    ) -> Result<Option<(Self, Layout)>> {
        Ok(None)
    }
}

/// Whether the optional kernels of [`FastPaths`] may run: unless `COTANGENT_FAST_PATHS`
/// is `0` in the environment (read once). With them off, every op takes its composition
/// of primitives, as on a device that has none: CI runs the linalg tests both ways.
pub(crate) fn fast_paths() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("COTANGENT_FAST_PATHS").map_or(true, |v| v.trim() != "0"))
}

/// What a kernel that works on the flagged matrices of a batch only returns.
#[derive(Debug)]
pub(crate) enum Flagged<S> {
    /// No matrix was flagged: nothing was computed.
    NoneFlagged,
    /// The result, zeros for the matrices that were not flagged.
    Computed(S),
}

/// A fused backward's answer that the gradient is undefined at this point (the op's
/// `NotDifferentiable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Undefined;

/// Why a fused SVD backward has no gradient (the VJP's `NotDifferentiable` reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SvdGradFail {
    /// A complex loss that depends on a singular pair's common phase.
    Phase,
    /// A zero gap `s_i² − s_j²` with a basis-dependent loss.
    Gap,
    /// A zero singular value with a cotangent outside the singular vectors' span.
    Zero,
}

/// The result of [`BackendStorage::lu_det`]: the packed factors as
/// [`BackendStorage::lu_factor`] returns them, and per matrix (contiguous, the batch's
/// shape, in the input's dtype, computed in f64): `det A = sign(P) ∏ U_ii`, its sign
/// (`-1`, `0`, `1`, NaN for NaN; for complex input the phase `det A / |det A|`, 0 when
/// singular), `log |det A|` (real: `f32` or `f64` for complex input; 0 unless asked for;
/// `-inf` at a zero pivot) and `loose` (Bool): all pivots finite and the smallest at most
/// `√ε` times the largest in absolute value (near singular). (`I`, `B` and `L`: the
/// integer, boolean and `logabs` buffers' types, the storage's by default.)
#[derive(Debug)]
pub(crate) struct LuDet<S, I = S, B = S, L = S> {
    pub(crate) lu: S,
    pub(crate) layout: Layout,
    pub(crate) piv: I,
    pub(crate) info: I,
    pub(crate) det: S,
    pub(crate) sign: S,
    pub(crate) logabs: L,
    pub(crate) loose: B,
}

/// The result of [`BackendStorage::lu_factor_solve`]: the factors and their
/// interchanges in the backend's packing (only [`BackendStorage::lu_solve_saved`] reads
/// them), `info` as [`BackendStorage::lu_factor`] returns it, and the solutions with
/// their layout as [`BackendStorage::lu_solve`] does. (`I`: the integer buffers' type,
/// the storage's by default.)
#[derive(Debug)]
pub(crate) struct LuSolved<S, I = S> {
    pub(crate) factors: S,
    pub(crate) perms: I,
    pub(crate) info: I,
    pub(crate) x: S,
    pub(crate) x_layout: Layout,
}

/// The result of [`BackendStorage::lu_solve_saved`]: the solutions (column-major) with
/// their layout and, where asked for, the negated outer products (row-major) with theirs.
#[derive(Debug)]
pub(crate) struct SavedSolve<S> {
    pub(crate) x: S,
    pub(crate) x_layout: Layout,
    pub(crate) outer: Option<(S, Layout)>,
}

/// Which factors a QR returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QrSpec {
    /// `Q` is formed.
    pub(crate) want_q: bool,
    /// `Q` is `(*, m, m)` and `R` `(*, m, n)` (else `(*, m, k)` and `(*, k, n)`,
    /// `k = min(m, n)`).
    pub(crate) complete: bool,
}

/// Which triangular system a solve is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TriSolve {
    /// The upper triangle of `A` is read (else the lower).
    pub(crate) upper: bool,
    /// `A X = B` (else `X A = B`).
    pub(crate) left: bool,
    /// The diagonal of `A` is taken as ones (and not read).
    pub(crate) unit: bool,
}

impl<S> LuDet<S> {
    /// The same result with every buffer mapped through `f` (to another storage type).
    pub(crate) fn rewrap<T>(self, f: impl Fn(S) -> T) -> LuDet<T> {
        LuDet {
            lu: f(self.lu),
            layout: self.layout,
            piv: f(self.piv),
            info: f(self.info),
            det: f(self.det),
            sign: f(self.sign),
            logabs: f(self.logabs),
            loose: f(self.loose),
        }
    }
}

impl<S> LuSolved<S> {
    /// The same result with every buffer mapped through `f` (to another storage type).
    pub(crate) fn rewrap<T>(self, f: impl Fn(S) -> T) -> LuSolved<T> {
        LuSolved {
            factors: f(self.factors),
            perms: f(self.perms),
            info: f(self.info),
            x: f(self.x),
            x_layout: self.x_layout,
        }
    }
}

impl<S> SavedSolve<S> {
    /// The same result with every buffer mapped through `f` (to another storage type).
    pub(crate) fn rewrap<T>(self, f: impl Fn(S) -> T) -> SavedSolve<T> {
        SavedSolve {
            x: f(self.x),
            x_layout: self.x_layout,
            outer: self.outer.map(|(o, l)| (f(o), l)),
        }
    }
}
