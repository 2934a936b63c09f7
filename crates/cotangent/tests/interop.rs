//! Conversions to and from ndarray, nalgebra and faer (features of those names): every
//! direction, every element type, strided tensors, empty shapes, and the zero-copy
//! promises (a view reads the tensor's own buffer; an owned array's buffer is taken).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
#![cfg(all(feature = "ndarray", feature = "nalgebra", feature = "faer"))]

use cotangent::{DType, Error, Tensor};
use half::{bf16, f16};
use ndarray::ShapeBuilder;
use num_complex::Complex;

/// A `(2, 3, 4)` f64 tensor of 0..24 and a few views of it.
fn views() -> Vec<(&'static str, Tensor)> {
    let a = Tensor::from_vec((0..24).map(f64::from).collect::<Vec<_>>(), (2, 3, 4)).unwrap();
    vec![
        ("contiguous", a.clone()),
        ("permuted", a.permute(&[2, 0, 1]).unwrap()),
        ("sliced", a.slice(2, 1, 4, 2).unwrap()),
        ("narrowed", a.narrow(1, 1, 2).unwrap()),
        (
            "expanded",
            a.select(0, 1)
                .unwrap()
                .select(0, 2)
                .unwrap()
                .unsqueeze(0)
                .unwrap()
                .expand(&[3, 4])
                .unwrap(),
        ),
        ("empty", a.narrow(1, 0, 0).unwrap()),
        ("scalar", a.select(0, 1).unwrap().select(0, 2).unwrap().select(0, 3).unwrap()),
    ]
}

/// Matrices (two dims) among [`views`] and more.
fn matrices() -> Vec<(&'static str, Tensor)> {
    let a = Tensor::from_vec((0..12).map(f64::from).collect::<Vec<_>>(), (3, 4)).unwrap();
    vec![
        ("contiguous", a.clone()),
        ("transposed", a.mT().unwrap()),
        ("row slice", a.narrow(0, 1, 2).unwrap()),
        ("column slice", a.narrow(1, 1, 2).unwrap()),
        ("stepped", a.slice(1, 0, 4, 2).unwrap()),
        ("stepped transposed", a.slice(1, 0, 4, 2).unwrap().mT().unwrap()),
        (
            "expanded",
            Tensor::from_vec(vec![1.0f64, 2.0, 3.0], (1, 3)).unwrap().expand(&[4, 3]).unwrap(),
        ),
        ("one row", a.narrow(0, 2, 1).unwrap()),
        ("no rows", a.narrow(0, 0, 0).unwrap()),
        ("no columns", a.narrow(1, 0, 0).unwrap()),
    ]
}

#[test]
fn ndarray_views_and_copies_read_the_elements() {
    for (what, t) in views() {
        let want = t.to_vec::<f64>().unwrap();
        let v = t.as_ndarray::<f64>().unwrap();
        assert_eq!(v.shape(), t.dims(), "{what}");
        assert_eq!(v.iter().copied().collect::<Vec<_>>(), want, "{what}");
        let o = t.to_ndarray::<f64>().unwrap();
        assert!(o.is_standard_layout(), "{what}");
        assert_eq!(o.iter().copied().collect::<Vec<_>>(), want, "{what}");
        // and back: from the view (copied) and from the owned array (taken)
        let back = Tensor::from_ndarray(v).unwrap();
        assert_eq!(
            (back.dims(), back.to_vec::<f64>().unwrap()),
            (t.dims(), want.clone()),
            "{what}"
        );
        let back = Tensor::from_ndarray(o).unwrap();
        assert_eq!((back.dims(), back.to_vec::<f64>().unwrap()), (t.dims(), want), "{what}");
    }
}

#[test]
fn ndarray_views_share_the_buffer() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], (2, 2)).unwrap();
    let tt = t.mT().unwrap();
    let a = t.as_ndarray::<f32>().unwrap();
    let b = tt.as_ndarray::<f32>().unwrap();
    assert_eq!(a.as_ptr(), b.as_ptr());
    assert_eq!(b.strides(), &[1, 2]);
}

#[test]
fn owned_arrays_give_their_buffer() {
    // a Fortran-ordered array: kept as a transposed view of the same buffer
    let a =
        ndarray::Array2::from_shape_vec((2, 3).f(), vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap();
    let t = Tensor::from_ndarray(a).unwrap();
    assert_eq!(t.dims(), &[2, 3]);
    assert_eq!(t.strides(), &[1, 2]);
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // a slice of an owned array: an offset into its buffer
    let b = ndarray::Array::from_shape_vec((3, 4), (0..12).map(f64::from).collect()).unwrap();
    let b = b.slice_move(ndarray::s![1.., ..;2]);
    let t = Tensor::from_ndarray(b).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![4.0, 6.0, 8.0, 10.0]);
    // negative strides are copied
    let c = ndarray::Array::from_vec(vec![1i64, 2, 3]).slice_move(ndarray::s![..;-1]);
    assert_eq!(Tensor::from_ndarray(c).unwrap().to_vec::<i64>().unwrap(), vec![3, 2, 1]);
    // zero-sized
    let e = ndarray::Array2::<f32>::zeros((0, 5));
    assert_eq!(Tensor::from_ndarray(e).unwrap().dims(), &[0, 5]);
}

#[test]
fn every_element_type_converts() {
    fn round<T: cotangent::Element>(v: Vec<T>) {
        let t = Tensor::from_vec(v.clone(), (2, 2)).unwrap();
        assert_eq!(t.to_ndarray::<T>().unwrap().into_raw_vec_and_offset().0, v);
        assert_eq!(
            Tensor::from_ndarray(t.to_ndarray::<T>().unwrap()).unwrap().to_vec::<T>().unwrap(),
            v
        );
        assert_eq!(t.to_dmatrix::<T>().unwrap().transpose().as_slice(), &v[..]);
        assert_eq!(
            Tensor::from_dmatrix(t.to_dmatrix::<T>().unwrap()).unwrap().to_vec::<T>().unwrap(),
            v
        );
        let f = t.to_faer::<T>().unwrap();
        assert_eq!(Tensor::from_faer(f.as_ref()).unwrap().to_vec::<T>().unwrap(), v);
        assert_eq!(t.dtype(), T::DTYPE);
    }
    round(vec![true, false, false, true]);
    round(vec![1i64, -2, 3, i64::MIN]);
    round(vec![bf16::from_f32(1.5), bf16::ONE, bf16::ZERO, bf16::NEG_ONE]);
    round(vec![f16::from_f32(1.5), f16::ONE, f16::ZERO, f16::NEG_ONE]);
    round(vec![1.5f32, -2.0, 3.0, f32::MIN_POSITIVE]);
    round(vec![1.5f64, -2.0, f64::MIN_POSITIVE, f64::MAX]);
    round(vec![
        Complex::new(1.0f32, 2.0),
        Complex::new(-1.0, 0.5),
        Complex::new(0.0, 0.0),
        Complex::new(3.0, -4.0),
    ]);
    round(vec![
        Complex::new(1.0f64, 2.0),
        Complex::new(-1.0, 0.5),
        Complex::new(0.0, 0.0),
        Complex::new(3.0, -4.0),
    ]);
}

#[test]
fn nalgebra_views_and_copies_read_the_elements() {
    for (what, t) in matrices() {
        let (r, c) = (t.dims()[0], t.dims()[1]);
        let want = t.to_vec::<f64>().unwrap();
        let row_major = |m: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
            (0..r).flat_map(|i| (0..c).map(move |j| (i, j))).map(|(i, j)| m(i, j)).collect()
        };
        let m = t.to_dmatrix::<f64>().unwrap();
        assert_eq!(row_major(&|i, j| m[(i, j)]), want, "{what}");
        assert_eq!(
            Tensor::from_nalgebra(&m.columns(0, c)).unwrap().to_vec::<f64>().unwrap(),
            want,
            "{what}"
        );
        match t.as_nalgebra::<f64>() {
            Ok(v) => {
                assert_eq!(v.shape(), (r, c), "{what}");
                assert_eq!(row_major(&|i, j| v[(i, j)]), want, "{what}");
                assert_eq!(
                    Tensor::from_nalgebra(&v).unwrap().to_vec::<f64>().unwrap(),
                    want,
                    "{what}"
                );
            }
            Err(e) => {
                assert_eq!(what, "expanded", "{e}");
                assert!(matches!(e, Error::InvalidArgument { op: "as_nalgebra", .. }), "{e:?}");
            }
        }
        let back = Tensor::from_dmatrix(m).unwrap();
        assert_eq!((back.dims(), back.to_vec::<f64>().unwrap()), (t.dims(), want), "{what}");
    }
}

#[test]
fn faer_views_and_copies_read_the_elements() {
    for (what, t) in matrices() {
        let (r, c) = (t.dims()[0], t.dims()[1]);
        let want = t.to_vec::<f64>().unwrap();
        let row_major = |m: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
            (0..r).flat_map(|i| (0..c).map(move |j| (i, j))).map(|(i, j)| m(i, j)).collect()
        };
        let m = t.to_faer::<f64>().unwrap();
        assert_eq!(row_major(&|i, j| m[(i, j)]), want, "{what}");
        assert_eq!(Tensor::from_faer(m.as_ref()).unwrap().to_vec::<f64>().unwrap(), want, "{what}");
        match t.as_faer::<f64>() {
            Ok(v) => {
                assert_eq!((v.nrows(), v.ncols()), (r, c), "{what}");
                assert_eq!(row_major(&|i, j| v[(i, j)]), want, "{what}");
            }
            // neither stride is 1, or one is 0
            Err(e) => {
                assert!(
                    matches!(what, "stepped" | "stepped transposed" | "expanded"),
                    "{what}: {e}"
                );
                assert!(matches!(e, Error::InvalidArgument { op: "as_faer", .. }), "{e:?}");
                assert!(t.contiguous().unwrap().as_faer::<f64>().is_ok());
            }
        }
    }
}

#[test]
fn faer_linear_algebra_on_a_view_agrees() {
    // a solve by faer on the view of a tensor agrees with the library's own solve
    let a = Tensor::from_vec(vec![4.0f64, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0], (3, 3)).unwrap();
    let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], (3, 1)).unwrap();
    let x = cotangent::linalg::solve(&a, &b, cotangent::linalg::Side::Left)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let lu = a.as_faer::<f64>().unwrap().partial_piv_lu();
    let y = faer::linalg::solvers::Solve::solve(&lu, b.to_faer::<f64>().unwrap());
    for (i, xi) in x.iter().enumerate() {
        assert!((xi - y[(i, 0)]).abs() < 1e-14);
    }
}

#[test]
fn conversions_out_check_the_dtype_and_rank() {
    let t = Tensor::zeros((2, 2), DType::F32).unwrap();
    let e = t.as_ndarray::<f64>().unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "as_ndarray", .. }), "{e:?}");
    let e = t.to_ndarray::<i64>().unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "to_ndarray", .. }), "{e:?}");
    let e = t.to_dmatrix::<f64>().unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "to_dmatrix", .. }), "{e:?}");
    let e = t.as_faer::<f64>().unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "as_faer", .. }), "{e:?}");
    let v = Tensor::zeros(3, DType::F32).unwrap();
    for e in [
        v.to_dmatrix::<f32>().unwrap_err(),
        v.as_nalgebra::<f32>().map(drop).unwrap_err(),
        v.to_faer::<f32>().map(drop).unwrap_err(),
        v.as_faer::<f32>().map(drop).unwrap_err(),
    ] {
        assert!(matches!(e, Error::BadShape { .. }), "{e:?}");
    }
}

#[test]
fn a_converted_tensor_is_a_leaf_and_differentiable() {
    let a = ndarray::array![[2.0f64, 1.0], [1.0, 3.0]];
    let t = Tensor::from_ndarray(a).unwrap().with_requires_grad(true).unwrap();
    let ld = cotangent::linalg::logdet(&t).unwrap();
    let g = ld.backward().unwrap();
    // d log det A / dA = A^{-T} = [[3, -1], [-1, 2]] / 5
    let g = g.get(&t).unwrap().to_ndarray::<f64>().unwrap();
    let want = ndarray::array![[0.6, -0.2], [-0.2, 0.4]].into_dyn();
    assert!(g.iter().zip(want.iter()).all(|(x, y)| (x - y).abs() < 1e-15), "{g}");
}
