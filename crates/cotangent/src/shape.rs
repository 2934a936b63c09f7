//! [`Shape`]: the sizes of a tensor's dimensions, dimension resolution and broadcasting.

use crate::error::{Error, Result};

/// How many dims [`Dims`] holds without a heap allocation.
const INLINE_DIMS: usize = 4;

/// A short list of `usize` (a shape's dims, a layout's strides) that keeps up to
/// [`INLINE_DIMS`] entries inline and more on the heap.
///
/// Why: every tensor has a shape and strides, and with a `Vec` each was a heap allocation
/// (two per tensor, most of them of rank 0 to 3). A 4 x 4 `x.sum()` fwd+bwd made 41
/// allocations, and `malloc`/`free` were a large share of a single 4 x 4 svdvals fwd+bwd.
/// Four entries inline, not more: [`crate::Error`] holds shapes, and with six each
/// `Result` grew past clippy's `result_large_err` bound (every op returns one).
#[derive(Clone)]
pub(crate) enum Dims {
    /// `len` entries at the front of the array (the rest are zero).
    Inline(u8, [usize; INLINE_DIMS]),
    /// More than [`INLINE_DIMS`] entries.
    Heap(Vec<usize>),
}

impl Dims {
    /// `len` zeros.
    pub(crate) fn zeros(len: usize) -> Dims {
        if len <= INLINE_DIMS {
            Dims::Inline(len as u8, [0; INLINE_DIMS])
        } else {
            Dims::Heap(vec![0; len])
        }
    }

    /// A copy of a slice.
    pub(crate) fn from_slice(v: &[usize]) -> Dims {
        if v.len() <= INLINE_DIMS {
            let mut a = [0; INLINE_DIMS];
            a[..v.len()].copy_from_slice(v);
            Dims::Inline(v.len() as u8, a)
        } else {
            Dims::Heap(v.to_vec())
        }
    }

    /// Appends an entry.
    pub(crate) fn push(&mut self, x: usize) {
        match self {
            Dims::Inline(len, a) if (*len as usize) < INLINE_DIMS => {
                a[*len as usize] = x;
                *len += 1;
            }
            Dims::Inline(len, a) => {
                let mut v = a[..*len as usize].to_vec();
                v.push(x);
                *self = Dims::Heap(v);
            }
            Dims::Heap(v) => v.push(x),
        }
    }

    /// Removes the entry at `i` (in range), shifting the later ones down.
    pub(crate) fn remove(&mut self, i: usize) {
        match self {
            Dims::Inline(len, a) => {
                let n = *len as usize;
                a.copy_within(i + 1..n, i);
                a[n - 1] = 0;
                *len -= 1;
            }
            Dims::Heap(v) => {
                v.remove(i);
            }
        }
    }
}

impl Default for Dims {
    fn default() -> Dims {
        Dims::Inline(0, [0; INLINE_DIMS])
    }
}

impl std::ops::Deref for Dims {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        match self {
            Dims::Inline(len, a) => &a[..*len as usize],
            Dims::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for Dims {
    fn deref_mut(&mut self) -> &mut [usize] {
        match self {
            Dims::Inline(len, a) => &mut a[..*len as usize],
            Dims::Heap(v) => v,
        }
    }
}

impl PartialEq for Dims {
    fn eq(&self, other: &Dims) -> bool {
        **self == **other
    }
}
impl Eq for Dims {}

impl std::hash::Hash for Dims {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h);
    }
}

impl std::fmt::Debug for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &**self)
    }
}

impl From<Vec<usize>> for Dims {
    fn from(v: Vec<usize>) -> Dims {
        if v.len() <= INLINE_DIMS {
            Dims::from_slice(&v)
        } else {
            Dims::Heap(v)
        }
    }
}
impl From<&[usize]> for Dims {
    fn from(v: &[usize]) -> Dims {
        Dims::from_slice(v)
    }
}
impl<const N: usize> From<[usize; N]> for Dims {
    fn from(v: [usize; N]) -> Dims {
        Dims::from_slice(&v)
    }
}

impl FromIterator<usize> for Dims {
    fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Dims {
        let mut d = Dims::default();
        for x in it {
            d.push(x);
        }
        d
    }
}

/// The sizes of a tensor's dimensions, outermost first. `[]` is a 0-d (scalar) tensor.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Dims);

impl Shape {
    /// A shape from its dims.
    pub fn new(dims: Vec<usize>) -> Shape {
        Shape(dims.into())
    }

    /// A shape from its dims (crate-internal: no heap allocation up to rank 4).
    pub(crate) fn of(dims: impl Into<Dims>) -> Shape {
        Shape(dims.into())
    }

    /// The dims.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The number of dims (0 for a scalar).
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The number of elements (1 for a scalar). Shapes of existing tensors never overflow;
    /// use [`Shape::checked_numel`] on untrusted dims.
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }

    /// The number of elements, or `SizeOverflow` if it does not fit in `usize` or exceeds
    /// what can be allocated (`isize::MAX` bytes of `f64`).
    pub fn checked_numel(&self, op: &'static str) -> Result<usize> {
        let mut n: usize = 1;
        for &d in self.0.iter() {
            n = n
                .checked_mul(d)
                .ok_or_else(|| Error::SizeOverflow { op, shape: self.0.to_vec() })?;
        }
        if n > (isize::MAX as usize) / 16 {
            return Err(Error::SizeOverflow { op, shape: self.0.to_vec() });
        }
        Ok(n)
    }

    /// Consumes the shape, returning its dims.
    pub fn into_dims(self) -> Vec<usize> {
        self.0.to_vec()
    }

    /// The C-contiguous (row-major) strides of this shape, in elements.
    pub fn contiguous_strides(&self) -> Vec<usize> {
        self.strides_contiguous().to_vec()
    }

    /// [`Shape::contiguous_strides`] as [`Dims`] (no heap allocation up to rank 4).
    pub(crate) fn strides_contiguous(&self) -> Dims {
        let mut strides = Dims::zeros(self.0.len());
        let mut s = 1usize;
        for (st, &d) in strides.iter_mut().zip(self.0.iter()).rev() {
            *st = s;
            s = s.saturating_mul(d.max(1));
        }
        strides
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Shape {
        Shape(v.into())
    }
}
impl From<&Vec<usize>> for Shape {
    fn from(v: &Vec<usize>) -> Shape {
        Shape(Dims::from_slice(v))
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Shape {
        Shape(Dims::from_slice(v))
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Shape {
        Shape(Dims::from_slice(&v))
    }
}
impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Shape {
        s.clone()
    }
}
impl From<()> for Shape {
    fn from((): ()) -> Shape {
        Shape(Dims::default())
    }
}
impl From<usize> for Shape {
    fn from(d: usize) -> Shape {
        Shape(Dims::from_slice(&[d]))
    }
}
impl From<(usize, usize)> for Shape {
    fn from((a, b): (usize, usize)) -> Shape {
        Shape(Dims::from_slice(&[a, b]))
    }
}
impl From<(usize, usize, usize)> for Shape {
    fn from((a, b, c): (usize, usize, usize)) -> Shape {
        Shape(Dims::from_slice(&[a, b, c]))
    }
}
impl From<(usize, usize, usize, usize)> for Shape {
    fn from((a, b, c, d): (usize, usize, usize, usize)) -> Shape {
        Shape(Dims::from_slice(&[a, b, c, d]))
    }
}

/// Resolves a possibly negative dim against a rank, as PyTorch's `maybe_wrap_dim`
/// (a 0-d tensor accepts the dims `0` and `-1`).
pub(crate) fn resolve_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize> {
    let r = rank.max(1) as isize;
    if dim < -r || dim >= r {
        return Err(Error::DimOutOfRange { op, dim, ndim: rank });
    }
    Ok(if dim < 0 { (dim + r) as usize } else { dim as usize })
}

/// Resolves a list of dims; repeated dims are an error.
pub(crate) fn resolve_dims(op: &'static str, dims: &[isize], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let d = resolve_dim(op, d, rank)?;
        if out.contains(&d) {
            return Err(Error::InvalidArgument { op, arg: "dim", reason: "a dim appears twice" });
        }
        out.push(d);
    }
    Ok(out)
}

/// The broadcast shape of two shapes (NumPy/PyTorch rules: align trailing dims; a dim of 1
/// stretches).
pub fn broadcast_shapes(op: &'static str, a: &Shape, b: &Shape) -> Result<Shape> {
    let (da, db) = (a.dims(), b.dims());
    let n = da.len().max(db.len());
    let mut out = Dims::zeros(n);
    for i in 0..n {
        let x = if i + da.len() >= n { da[i + da.len() - n] } else { 1 };
        let y = if i + db.len() >= n { db[i + db.len() - n] } else { 1 };
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(Error::ShapeMismatch { op, lhs: a.clone(), rhs: b.clone() });
        };
    }
    Ok(Shape(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_aligns_trailing_dims() {
        let s = broadcast_shapes("t", &Shape::from((3, 1)), &Shape::from(4)).unwrap();
        assert_eq!(s.dims(), &[3, 4]);
        assert!(broadcast_shapes("t", &Shape::from(3), &Shape::from(4)).is_err());
        assert_eq!(broadcast_shapes("t", &Shape::from(()), &Shape::from(0)).unwrap().dims(), &[0]);
    }

    #[test]
    fn dims_wrap_like_torch() {
        assert_eq!(resolve_dim("t", -1, 3).unwrap(), 2);
        assert_eq!(resolve_dim("t", -1, 0).unwrap(), 0);
        assert!(resolve_dim("t", 3, 3).is_err());
        assert!(resolve_dim("t", -4, 3).is_err());
        assert!(resolve_dims("t", &[0, -3], 3).is_err());
    }

    #[test]
    fn dims_inline_and_on_the_heap_behave_alike() {
        // past the inline capacity by pushes, back under it by removals: the same list,
        // equal and hashed alike whichever way it is stored
        let mut d = Dims::default();
        for x in 0..9 {
            d.push(x * 10);
        }
        assert!(matches!(d, Dims::Heap(_)));
        assert_eq!(&*d, &[0, 10, 20, 30, 40, 50, 60, 70, 80]);
        for _ in 0..6 {
            d.remove(1);
        }
        assert_eq!(&*d, &[0, 70, 80]);
        let inline = Dims::from_slice(&[0, 70, 80]);
        assert!(matches!(inline, Dims::Inline(3, _)));
        assert_eq!(d, inline);
        use std::hash::BuildHasher;
        let h = std::hash::RandomState::new();
        assert_eq!(h.hash_one(&d), h.hash_one(&inline));
        let mut i = Dims::from_slice(&[1, 2, 3]);
        i.remove(0);
        i.push(7);
        assert_eq!(&*i, &[2, 3, 7]);
        assert_eq!(Dims::from(vec![1usize; 7]).len(), 7);
        assert_eq!(&*Dims::zeros(8), &[0; 8]);
        assert_eq!(format!("{:?}", Shape::from((2, 3))), "[2, 3]");
        let big = Shape::new((1..=8).collect());
        assert_eq!(big.dims(), &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(big.contiguous_strides(), vec![40320, 20160, 6720, 1680, 336, 56, 8, 1]);
        assert_eq!(big.into_dims().len(), 8);
    }

    #[test]
    fn overflow_is_an_error() {
        let s = Shape::from(vec![usize::MAX, 2]);
        assert!(matches!(s.checked_numel("t"), Err(Error::SizeOverflow { .. })));
    }
}
