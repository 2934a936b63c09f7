//! [`Shape`]: the sizes of a tensor's dimensions, dimension resolution and broadcasting.

use crate::error::{Error, Result};

/// The sizes of a tensor's dimensions, outermost first. `[]` is a 0-d (scalar) tensor.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A shape from its dims.
    pub fn new(dims: Vec<usize>) -> Shape {
        Shape(dims)
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
        for &d in &self.0 {
            n = n
                .checked_mul(d)
                .ok_or_else(|| Error::SizeOverflow { op, shape: self.0.clone() })?;
        }
        if n > (isize::MAX as usize) / 16 {
            return Err(Error::SizeOverflow { op, shape: self.0.clone() });
        }
        Ok(n)
    }

    /// Consumes the shape, returning its dims.
    pub fn into_dims(self) -> Vec<usize> {
        self.0
    }

    /// The C-contiguous (row-major) strides of this shape, in elements.
    pub fn contiguous_strides(&self) -> Vec<usize> {
        let mut strides = vec![0; self.0.len()];
        let mut s = 1usize;
        for (st, &d) in strides.iter_mut().zip(&self.0).rev() {
            *st = s;
            s = s.saturating_mul(d.max(1));
        }
        strides
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Shape {
        Shape(v)
    }
}
impl From<&Vec<usize>> for Shape {
    fn from(v: &Vec<usize>) -> Shape {
        Shape(v.clone())
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Shape {
        Shape(v.to_vec())
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Shape {
        Shape(v.to_vec())
    }
}
impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Shape {
        s.clone()
    }
}
impl From<()> for Shape {
    fn from((): ()) -> Shape {
        Shape(Vec::new())
    }
}
impl From<usize> for Shape {
    fn from(d: usize) -> Shape {
        Shape(vec![d])
    }
}
impl From<(usize, usize)> for Shape {
    fn from((a, b): (usize, usize)) -> Shape {
        Shape(vec![a, b])
    }
}
impl From<(usize, usize, usize)> for Shape {
    fn from((a, b, c): (usize, usize, usize)) -> Shape {
        Shape(vec![a, b, c])
    }
}
impl From<(usize, usize, usize, usize)> for Shape {
    fn from((a, b, c, d): (usize, usize, usize, usize)) -> Shape {
        Shape(vec![a, b, c, d])
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
    let mut out = vec![0; n];
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
    fn overflow_is_an_error() {
        let s = Shape::from(vec![usize::MAX, 2]);
        assert!(matches!(s.checked_numel("t"), Err(Error::SizeOverflow { .. })));
    }
}
