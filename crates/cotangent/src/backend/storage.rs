//! [`Storage`]: a tensor's buffer on some device, and the one place that dispatches on
//! the device. Each kernel is one `match` here, forwarding to the device's
//! [`BackendStorage`] implementation; everything above `src/backend/` (tensor, ops,
//! linalg) calls these methods and never names a device's storage type. The optional
//! kernels ([`FastPaths`]) answer `None` where the device has none or the environment
//! turns them off ([`fast_paths`]), and for complex operands (every fused kernel is
//! written for real numbers); the op then composes primitives. With one device the
//! operands of a kernel are always on it; a second device turns [`cpu`] below into a
//! `DeviceMismatch` check.

use super::cpu::CpuStorage;
use super::{
    fast_paths, BackendStorage, BinaryKernel, CmpOp, ComplexPart, FastPaths, Flagged, LuDet,
    LuSolved, QrSpec, ReduceOp, SavedSolve, SvdGradFail, TriSolve, UnaryKernel, Undefined,
};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::host::HostBuffer;
use crate::layout::Layout;
use crate::shape::Shape;

/// A tensor's buffer, on some device. Immutable once created; shared by views.
#[derive(Debug)]
pub(crate) enum Storage {
    Cpu(CpuStorage),
}

impl Drop for Storage {
    /// Large host buffers go back to the CPU backend's cache (see `cpu::pool`).
    fn drop(&mut self) {
        match self {
            Storage::Cpu(s) => s.recycle(),
        }
    }
}

/// The CPU buffer of a further operand of a CPU kernel. With one device this cannot
/// fail; a second device makes it a `DeviceMismatch` check.
fn cpu(s: &Storage) -> &CpuStorage {
    match s {
        Storage::Cpu(c) => c,
    }
}

/// [`cpu`] for an optional strided operand.
fn cpu_opt<'a>(x: Option<(&'a Storage, &'a Layout)>) -> Option<(&'a CpuStorage, &'a Layout)> {
    x.map(|(s, l)| (cpu(s), l))
}

/// A kernel's `(buffer, layout)` result on the CPU device.
fn on_cpu((s, l): (CpuStorage, Layout)) -> (Storage, Layout) {
    (Storage::Cpu(s), l)
}

impl Storage {
    /// The device the buffer lives on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
        }
    }

    /// The dtype of the elements.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => BackendStorage::dtype(s),
        }
    }

    /// The number of elements in the buffer.
    pub(crate) fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
        }
    }

    /// The elements, borrowed, where the device keeps them in host memory as `T` (the
    /// CPU); `None` for another dtype (or a device whose memory the host cannot read).
    #[cfg(any(feature = "ndarray", feature = "nalgebra", feature = "faer"))]
    pub(crate) fn host_slice<T: crate::dtype::Element>(&self) -> Option<&[T]> {
        match self {
            Storage::Cpu(s) => s.as_slice::<T>(),
        }
    }

    /// The host elements `h` as a buffer of the CPU device, where new tensors are made
    /// unless a device is named (the CPU keeps host memory as it is: no copy, no failure).
    pub(crate) fn host(h: HostBuffer) -> Storage {
        Storage::Cpu(h)
    }

    /// A buffer on `device` holding the host elements `h` (moved where the device keeps
    /// its tensors in host memory).
    pub(crate) fn from_host(device: Device, h: HostBuffer) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::from_host(device, h)?)),
        }
    }

    /// The elements at `l`, in row-major order, in a fresh host buffer.
    pub(crate) fn to_host(&self, l: &Layout) -> Result<HostBuffer> {
        match self {
            Storage::Cpu(s) => s.to_host(l),
        }
    }

    /// See [`BackendStorage::to_host_f64`].
    pub(crate) fn to_host_f64(&self, l: &Layout) -> Result<Vec<f64>> {
        match self {
            Storage::Cpu(s) => s.to_host_f64(l),
        }
    }

    /// Whether reading this storage back to the host costs no transfer (the CPU device
    /// keeps its tensors in host memory): an op may then choose its work from the data
    /// (as `pinv`'s QR certificate does), where on another device it takes a composition
    /// that reads nothing back.
    pub(crate) fn cheap_reads(&self) -> bool {
        match self {
            Storage::Cpu(_) => true,
        }
    }

    /// The position and value of the first non-zero element of the `I64` or `Bool`
    /// elements at `l` (row-major order): the failing matrix of a batch's `info`, or the
    /// first matrix a per-matrix flag marks, read where it lies.
    pub(crate) fn first_nonzero(&self, l: &Layout) -> Result<Option<(usize, i64)>> {
        match self {
            Storage::Cpu(s) => s.first_nonzero(l),
        }
    }

    /// `n` zeros of `dtype` on `device`.
    pub(crate) fn zeros(device: Device, n: usize, dtype: DType) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::zeros(device, n, dtype)?)),
        }
    }

    /// See [`BackendStorage::copy_strided`].
    pub(crate) fn copy_strided(&self, l: &Layout) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.copy_strided(l).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::cast`].
    pub(crate) fn cast(&self, l: &Layout, to: DType) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.cast(l, to).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::unary`].
    pub(crate) fn unary<K: UnaryKernel>(&self, l: &Layout, k: K) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.unary(l, k).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::binary`].
    pub(crate) fn binary<K: BinaryKernel>(
        &self,
        l: &Layout,
        rhs: &Storage,
        rl: &Layout,
        k: K,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.binary(l, cpu(rhs), rl, k).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::cmp`].
    pub(crate) fn cmp(&self, l: &Layout, rhs: &Storage, rl: &Layout, op: CmpOp) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.cmp(l, cpu(rhs), rl, op).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::where_cond`].
    pub(crate) fn where_cond(
        &self,
        l: &Layout,
        t: &Storage,
        tl: &Layout,
        f: &Storage,
        fl: &Layout,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.where_cond(l, cpu(t), tl, cpu(f), fl).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::complex_part`].
    pub(crate) fn complex_part(&self, l: &Layout, part: ComplexPart) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.complex_part(l, part).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::complex`].
    pub(crate) fn complex(&self, l: &Layout, im: &Storage, il: &Layout) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.complex(l, cpu(im), il).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::reduce`].
    pub(crate) fn reduce(&self, l: &Layout, dims: &[usize], op: ReduceOp) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.reduce(l, dims, op).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::scatter_strided`].
    pub(crate) fn scatter_strided(
        &self,
        src: &Layout,
        numel: usize,
        dst: &Layout,
        accumulate: bool,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.scatter_strided(src, numel, dst, accumulate).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::vector_norm`].
    pub(crate) fn vector_norm(&self, l: &Layout, dims: &[usize], ord: f64) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.vector_norm(l, dims, ord).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::permutation`].
    pub(crate) fn permutation(&self, l: &Layout, m: usize, op: &'static str) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.permutation(l, m, op).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::cat`]; the parts are on one device (`parts` is not empty).
    pub(crate) fn cat(parts: &[(&Storage, &Layout)], dim: usize, out: &Shape) -> Result<Storage> {
        let cpu_parts: Vec<(&CpuStorage, &Layout)> =
            parts.iter().map(|&(s, l)| (cpu(s), l)).collect();
        CpuStorage::cat(&cpu_parts, dim, out).map(Storage::Cpu)
    }

    /// See [`BackendStorage::flip`].
    pub(crate) fn flip(&self, l: &Layout, dims: &[usize]) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.flip(l, dims).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::gather`].
    pub(crate) fn gather(
        &self,
        l: &Layout,
        dim: usize,
        index: &Storage,
        il: &Layout,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.gather(l, dim, cpu(index), il).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::scatter_add`].
    pub(crate) fn scatter_add(
        &self,
        l: &Layout,
        dim: usize,
        index: &Storage,
        il: &Layout,
        src: &Storage,
        sl: &Layout,
    ) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => {
                s.scatter_add(l, dim, cpu(index), il, cpu(src), sl).map(Storage::Cpu)
            }
        }
    }

    /// See [`BackendStorage::matmul`].
    pub(crate) fn matmul(&self, l: &Layout, rhs: &Storage, rl: &Layout) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => s.matmul(l, cpu(rhs), rl).map(Storage::Cpu),
        }
    }

    /// See [`BackendStorage::solve_triangular`].
    pub(crate) fn solve_triangular(
        &self,
        l: &Layout,
        b: &Storage,
        bl: &Layout,
        spec: TriSolve,
    ) -> Result<(Storage, Layout)> {
        match self {
            Storage::Cpu(s) => s.solve_triangular(l, cpu(b), bl, spec).map(on_cpu),
        }
    }

    /// See [`BackendStorage::cholesky`].
    pub(crate) fn cholesky(&self, l: &Layout, upper: bool) -> Result<(Storage, Layout, Storage)> {
        match self {
            Storage::Cpu(s) => {
                let (f, fl, info) = s.cholesky(l, upper)?;
                Ok((Storage::Cpu(f), fl, Storage::Cpu(info)))
            }
        }
    }

    /// See [`BackendStorage::lu_factor`].
    pub(crate) fn lu_factor(
        &self,
        l: &Layout,
        pivot: bool,
    ) -> Result<(Storage, Layout, Storage, Storage)> {
        match self {
            Storage::Cpu(s) => {
                let (f, fl, p, i) = s.lu_factor(l, pivot)?;
                Ok((Storage::Cpu(f), fl, Storage::Cpu(p), Storage::Cpu(i)))
            }
        }
    }

    /// See [`BackendStorage::ldl_factor`].
    pub(crate) fn ldl_factor(
        &self,
        l: &Layout,
        hermitian: bool,
    ) -> Result<(Storage, Layout, Storage, Storage)> {
        match self {
            Storage::Cpu(s) => {
                let (f, fl, p, i) = s.ldl_factor(l, hermitian)?;
                Ok((Storage::Cpu(f), fl, Storage::Cpu(p), Storage::Cpu(i)))
            }
        }
    }

    /// See [`BackendStorage::ldl_solve`].
    pub(crate) fn ldl_solve(
        &self,
        l: &Layout,
        piv: &Storage,
        b: &Storage,
        bl: &Layout,
        hermitian: bool,
    ) -> Result<(Storage, Layout)> {
        match self {
            Storage::Cpu(s) => s.ldl_solve(l, cpu(piv), cpu(b), bl, hermitian).map(on_cpu),
        }
    }

    /// See [`BackendStorage::lu_det`].
    pub(crate) fn lu_det(&self, l: &Layout, want_log: bool) -> Result<LuDet<Storage>> {
        match self {
            Storage::Cpu(s) => Ok(s.lu_det(l, want_log)?.rewrap(Storage::Cpu)),
        }
    }

    /// See [`BackendStorage::lu_solve`].
    pub(crate) fn lu_solve(
        &self,
        l: &Layout,
        piv: &Storage,
        b: &Storage,
        bl: &Layout,
        adjoint: bool,
    ) -> Result<(Storage, Layout)> {
        match self {
            Storage::Cpu(s) => s.lu_solve(l, cpu(piv), cpu(b), bl, adjoint).map(on_cpu),
        }
    }

    /// See [`BackendStorage::qr`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn qr(
        &self,
        l: &Layout,
        spec: QrSpec,
    ) -> Result<(Option<(Storage, Layout)>, Storage, Layout)> {
        match self {
            Storage::Cpu(s) => {
                let (q, r, rl) = s.qr(l, spec)?;
                Ok((q.map(on_cpu), Storage::Cpu(r), rl))
            }
        }
    }

    /// See [`BackendStorage::svd`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn svd(
        &self,
        l: &Layout,
        want_uv: bool,
        full: bool,
    ) -> Result<(Option<(Storage, Layout)>, (Storage, Layout), Option<(Storage, Layout)>)> {
        match self {
            Storage::Cpu(a) => {
                let (u, s, vh) = a.svd(l, want_uv, full)?;
                Ok((u.map(on_cpu), on_cpu(s), vh.map(on_cpu)))
            }
        }
    }

    /// See [`BackendStorage::eigh`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn eigh(
        &self,
        l: &Layout,
        upper: bool,
        vectors: bool,
    ) -> Result<(Storage, Option<(Storage, Layout)>, Option<usize>)> {
        match self {
            Storage::Cpu(a) => {
                let (w, v, failed) = a.eigh(l, upper, vectors)?;
                Ok((Storage::Cpu(w), v.map(on_cpu), failed))
            }
        }
    }

    /// See [`BackendStorage::eig`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn eig(
        &self,
        l: &Layout,
        vectors: bool,
    ) -> Result<(Storage, Option<(Storage, Layout)>, Option<usize>)> {
        match self {
            Storage::Cpu(a) => {
                let (w, v, failed) = a.eig(l, vectors)?;
                Ok((Storage::Cpu(w), v.map(on_cpu), failed))
            }
        }
    }

    /// See [`BackendStorage::matrix_exp`].
    pub(crate) fn matrix_exp(&self, l: &Layout) -> Result<(Storage, Layout)> {
        match self {
            Storage::Cpu(s) => s.matrix_exp(l).map(on_cpu),
        }
    }

    // ---------------------------------------------------------------------------------
    // the optional kernels (FastPaths): `Ok(None)` where the device has none or
    // COTANGENT_FAST_PATHS=0, and the op then takes its composition of primitives

    /// See [`FastPaths::vector_norm_backward`].
    pub(crate) fn vector_norm_backward(
        &self,
        l: &Layout,
        dims: &[usize],
        ord: f64,
        y: (&Storage, &Layout),
        g: (&Storage, &Layout),
    ) -> Result<Option<Storage>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s
                .vector_norm_backward(l, dims, ord, (cpu(y.0), y.1), (cpu(g.0), g.1))?
                .map(Storage::Cpu)),
        }
    }

    /// See [`FastPaths::matmul_jvp`].
    pub(crate) fn matmul_jvp(
        &self,
        l: &Layout,
        b: (&Storage, &Layout),
        da: (&Storage, &Layout),
        db: (&Storage, &Layout),
    ) -> Result<Option<Storage>> {
        let dtype = self.dtype();
        if !fast_paths()
            || dtype.is_complex()
            || [b.0, da.0, db.0].iter().any(|s| s.dtype() != dtype)
        {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s
                .matmul_jvp(l, (cpu(b.0), b.1), (cpu(da.0), da.1), (cpu(db.0), db.1))?
                .map(Storage::Cpu)),
        }
    }

    /// See [`FastPaths::inv_sandwich`].
    pub(crate) fn inv_sandwich(
        &self,
        l: &Layout,
        g: &Storage,
        gl: &Layout,
        alpha: f64,
    ) -> Result<Option<Storage>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.inv_sandwich(l, cpu(g), gl, alpha)?.map(Storage::Cpu)),
        }
    }

    /// See [`FastPaths::cholesky_backward`].
    pub(crate) fn cholesky_backward(
        &self,
        l: &Layout,
        g: &Storage,
        gl: &Layout,
        upper: bool,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.cholesky_backward(l, cpu(g), gl, upper)?.map(on_cpu)),
        }
    }

    /// See [`FastPaths::cholesky_jvp`].
    pub(crate) fn cholesky_jvp(
        &self,
        l: &Layout,
        da: &Storage,
        dal: &Layout,
        upper: bool,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.cholesky_jvp(l, cpu(da), dal, upper)?.map(on_cpu)),
        }
    }

    /// See [`FastPaths::lu_inv`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn lu_inv(&self, l: &Layout) -> Result<Option<(Storage, Layout, Storage)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => {
                Ok(s.lu_inv(l)?.map(|(x, xl, info)| (Storage::Cpu(x), xl, Storage::Cpu(info))))
            }
        }
    }

    /// See [`FastPaths::lu_factor_solve`].
    pub(crate) fn lu_factor_solve(
        &self,
        l: &Layout,
        b: &Storage,
        bl: &Layout,
        adjoint: bool,
    ) -> Result<Option<LuSolved<Storage>>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => {
                Ok(s.lu_factor_solve(l, cpu(b), bl, adjoint)?.map(|r| r.rewrap(Storage::Cpu)))
            }
        }
    }

    /// See [`FastPaths::lu_solve_saved`] (reached only with the factors of
    /// [`Storage::lu_factor_solve`], so not switched off by `COTANGENT_FAST_PATHS`).
    pub(crate) fn lu_solve_saved(
        &self,
        perms: &Storage,
        n: usize,
        b: &Storage,
        bl: &Layout,
        adjoint: bool,
        outer: Option<(&Storage, &Layout)>,
    ) -> Result<Option<SavedSolve<Storage>>> {
        match self {
            Storage::Cpu(s) => Ok(s
                .lu_solve_saved(cpu(perms), n, cpu(b), bl, adjoint, cpu_opt(outer))?
                .map(|r| r.rewrap(Storage::Cpu))),
        }
    }

    /// See [`FastPaths::lu_factor_backward`].
    pub(crate) fn lu_factor_backward(
        &self,
        l: &Layout,
        piv: &Storage,
        g: &Storage,
        gl: &Layout,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.lu_factor_backward(l, cpu(piv), cpu(g), gl)?.map(on_cpu)),
        }
    }

    /// See [`FastPaths::lu_inv_t`].
    pub(crate) fn lu_inv_t(
        &self,
        l: &Layout,
        piv: &Storage,
        c: &Storage,
        row_major: bool,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.lu_inv_t(l, cpu(piv), cpu(c), row_major)?.map(on_cpu)),
        }
    }

    /// See [`FastPaths::cofactor`].
    pub(crate) fn cofactor(&self, l: &Layout, only: &Storage) -> Result<Option<Flagged<Storage>>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.cofactor(l, cpu(only))?.map(|c| match c {
                Flagged::NoneFlagged => Flagged::NoneFlagged,
                Flagged::Computed(c) => Flagged::Computed(Storage::Cpu(c)),
            })),
        }
    }

    /// See [`FastPaths::qr_backward`].
    pub(crate) fn qr_backward(
        &self,
        l: &Layout,
        r: (&Storage, &Layout),
        gq: Option<(&Storage, &Layout)>,
        gr: Option<(&Storage, &Layout)>,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => {
                Ok(s.qr_backward(l, (cpu(r.0), r.1), cpu_opt(gq), cpu_opt(gr))?.map(on_cpu))
            }
        }
    }

    /// See [`FastPaths::svd_backward`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn svd_backward(
        &self,
        l: &Layout,
        s: &Storage,
        vh: (&Storage, &Layout),
        gu: Option<(&Storage, &Layout)>,
        gs: Option<&Storage>,
        gvh: Option<(&Storage, &Layout)>,
    ) -> Result<Option<std::result::Result<(Storage, Layout), SvdGradFail>>> {
        if !fast_paths() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(u) => Ok(u
                .svd_backward(l, cpu(s), (cpu(vh.0), vh.1), cpu_opt(gu), gs.map(cpu), cpu_opt(gvh))?
                .map(|r| r.map(on_cpu))),
        }
    }

    /// See [`FastPaths::eigh_backward`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn eigh_backward(
        &self,
        l: &Layout,
        w: (&Storage, &Layout),
        gw: Option<(&Storage, &Layout)>,
        gv: Option<(&Storage, &Layout)>,
    ) -> Result<Option<std::result::Result<(Storage, Layout), Undefined>>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(v) => Ok(v
                .eigh_backward(l, (cpu(w.0), w.1), cpu_opt(gw), cpu_opt(gv))?
                .map(|r| r.map(on_cpu))),
        }
    }

    /// See [`FastPaths::eig_backward`].
    pub(crate) fn eig_backward(
        &self,
        l: &Layout,
        w: (&Storage, &Layout),
        gw: Option<(&Storage, &Layout)>,
        gv: Option<(&Storage, &Layout)>,
        real: bool,
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(v) => {
                Ok(v.eig_backward(l, (cpu(w.0), w.1), cpu_opt(gw), cpu_opt(gv), real)?.map(on_cpu))
            }
        }
    }

    /// See [`FastPaths::eigh_inner`].
    pub(crate) fn eigh_inner(
        &self,
        l: &Layout,
        w: (&Storage, &Layout),
        gw: Option<(&Storage, &Layout)>,
    ) -> Result<Option<std::result::Result<Storage, Undefined>>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(x) => {
                Ok(x.eigh_inner(l, (cpu(w.0), w.1), cpu_opt(gw))?.map(|r| r.map(Storage::Cpu)))
            }
        }
    }

    /// See [`FastPaths::matrix_exp_frechet`].
    pub(crate) fn matrix_exp_frechet(
        &self,
        l: &Layout,
        e: (&Storage, &Layout),
    ) -> Result<Option<(Storage, Layout)>> {
        if !fast_paths() || self.dtype().is_complex() {
            return Ok(None);
        }
        match self {
            Storage::Cpu(s) => Ok(s.matrix_exp_frechet(l, (cpu(e.0), e.1))?.map(on_cpu)),
        }
    }
}
