//! Elementwise ops on non-contiguous operands (transposed, permuted, sliced with steps,
//! broadcast with stride 0, offset views, empty dims) against the same ops on contiguous
//! copies: the strided kernels visit elements in another order but must give the same
//! bits, for every rank 0..=4, on sizes on both sides of the parallel threshold, and
//! whatever the number of threads.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::{DType, Element, Generator, Result, Tensor};

/// The elements of view `t` of a buffer `base`, in row-major order, from its layout alone
/// (an independent reference for the kernels).
fn view_ref<T: Copy>(base: &[T], t: &Tensor) -> Vec<T> {
    let l = t.layout();
    let dims = l.dims();
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        out.push(base[l.offset() + idx.iter().zip(l.strides()).map(|(i, s)| i * s).sum::<usize>()]);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// A view of shape `shape` of a fresh buffer, laid out as `kind` says; returns the view
/// and its elements (from the layout).
fn make<T: Element>(
    kind: usize,
    shape: &[usize],
    gen: &mut impl FnMut() -> T,
) -> Result<(Tensor, Vec<T>)> {
    let r = shape.len();
    let fresh = |s: &[usize], gen: &mut dyn FnMut() -> T| -> Result<(Tensor, Vec<T>)> {
        let n: usize = s.iter().product();
        let v: Vec<T> = (0..n).map(|_| gen()).collect();
        Ok((Tensor::from_vec(v.clone(), s.to_vec())?, v))
    };
    let (view, base) = match kind {
        // dims reversed in memory (a transpose for rank 2)
        1 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let (b, v) = fresh(&rev, gen)?;
            let p: Vec<isize> = (0..r as isize).rev().collect();
            (b.permute(&p)?, v)
        }
        // last two dims swapped (mT), the rest contiguous
        2 if r >= 2 => {
            let mut s = shape.to_vec();
            s.swap(r - 2, r - 1);
            let (b, v) = fresh(&s, gen)?;
            (b.mT()?, v)
        }
        // every dim sliced with step 2 from an offset of 1
        3 => {
            let s: Vec<usize> = shape.iter().map(|&d| 2 * d + 1).collect();
            let (mut b, v) = fresh(&s, gen)?;
            for (d, &len) in shape.iter().enumerate() {
                b = b.slice(d as isize, 1, 1 + 2 * len as isize, 2)?;
            }
            (b, v)
        }
        // broadcast: every other dim has stride 0
        4 => {
            let s: Vec<usize> =
                shape.iter().enumerate().map(|(i, &d)| if i % 2 == 0 { 1 } else { d }).collect();
            let (b, v) = fresh(&s, gen)?;
            (b.broadcast_to(shape.to_vec())?, v)
        }
        // broadcast along the last dim, the others transposed
        5 if r >= 1 => {
            let mut s: Vec<usize> = shape.iter().rev().copied().collect();
            s[0] = 1;
            let (b, v) = fresh(&s, gen)?;
            let p: Vec<isize> = (0..r as isize).rev().collect();
            (b.permute(&p)?.broadcast_to(shape.to_vec())?, v)
        }
        // a narrowed last dim (rows with gaps) of a transposed buffer
        6 if r >= 2 => {
            let mut s: Vec<usize> = shape.to_vec();
            s[r - 1] += 3;
            s.swap(r - 2, r - 1);
            let (b, v) = fresh(&s, gen)?;
            (b.mT()?.narrow(r as isize - 1, 2, shape[r - 1])?, v)
        }
        // contiguous (kind 0, and the kinds a rank has no room for)
        _ => fresh(shape, gen)?,
    };
    assert_eq!(view.dims(), shape);
    let vals = view_ref(&base, &view);
    Ok((view, vals))
}

const KINDS: usize = 7;

fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F64 => t.to_vec::<f64>().unwrap().iter().map(|x| x.to_bits()).collect(),
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|x| u64::from(x.to_bits())).collect(),
        DType::Bool => t.to_vec::<bool>().unwrap().iter().map(|&x| u64::from(x)).collect(),
        DType::I64 => t.to_vec::<i64>().unwrap().iter().map(|&x| x as u64).collect(),
        d => panic!("{d:?}"),
    }
}

/// Whether the strides of `t` are those of a contiguous tensor with its dims permuted
/// (every element in one gap-free block: a transpose of a contiguous tensor).
fn dense(t: &Tensor) -> bool {
    let mut ds: Vec<(usize, usize)> =
        t.strides().iter().zip(t.dims()).filter(|(_, &d)| d > 1).map(|(&s, &d)| (s, d)).collect();
    ds.sort_unstable();
    let mut expected = 1;
    ds.iter().all(|&(s, d)| {
        let ok = s == expected;
        expected *= d;
        ok
    })
}

/// `got` has the same shape, dtype and bits as `want`, and is dense: contiguous, or in
/// the order of a dense permuted (transposed) input, as PyTorch keeps it.
fn same(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dims(), want.dims(), "{what}");
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    assert!(got.is_contiguous() || dense(got), "{what}: strides {:?}", got.strides());
    assert!(bits(got) == bits(want), "{what}: values differ");
}

fn shapes() -> Vec<Vec<usize>> {
    vec![
        vec![],
        vec![0],
        vec![1],
        vec![7],
        vec![3, 5],
        vec![1, 4],
        vec![4, 0],
        vec![2, 3, 4],
        vec![3, 1, 5],
        vec![2, 3, 2, 5],
        vec![2, 1, 3, 4],
        vec![0, 2, 3, 1],
    ]
}

/// Above the parallel threshold (65,536 elements), and a batch of small matrices.
fn large_shapes() -> Vec<Vec<usize>> {
    vec![vec![300, 300], vec![5000, 4, 4], vec![70_001], vec![3, 130, 257]]
}

/// Every unary, binary and ternary kernel on every pair of layouts against contiguous
/// inputs holding the same values.
fn check_shape(shape: &[usize], gen: &mut Generator, kinds: &[usize]) -> Result<()> {
    let contig = |v: Vec<f64>| Tensor::from_vec(v, shape.to_vec());
    for &ka in kinds {
        let (a, av) = make(ka, shape, &mut || gen.normal())?;
        let ac = contig(av.clone())?;
        let what = |op: &str| format!("{op} shape {shape:?} layout {ka} strides {:?}", a.strides());
        same(&what("contiguous"), &a.contiguous()?, &ac);
        assert_eq!(a.to_vec::<f64>()?, av, "{}", what("to_vec"));
        same(&what("exp"), &a.exp()?, &ac.exp()?);
        same(&what("neg"), &a.neg()?, &ac.neg()?);
        same(&what("to f32"), &a.to_dtype(DType::F32)?, &ac.to_dtype(DType::F32)?);
        let a32 = a.to_dtype(DType::F32)?;
        same(&what("f32 sqrt"), &a32.abs()?.sqrt()?, &ac.to_dtype(DType::F32)?.abs()?.sqrt()?);
        for &kb in kinds {
            let (b, bv) = make(kb, shape, &mut || gen.normal())?;
            let bc = contig(bv)?;
            let what = |op: &str| {
                format!(
                    "{op} shape {shape:?} layouts {ka} {kb} strides {:?} {:?}",
                    a.strides(),
                    b.strides()
                )
            };
            same(&what("sub"), &a.sub(&b)?, &ac.sub(&bc)?);
            same(&what("mul"), &a.mul(&b)?, &ac.mul(&bc)?);
            same(&what("div"), &a.div(&b)?, &ac.div(&bc)?);
            same(&what("maximum"), &a.maximum(&b)?, &ac.maximum(&bc)?);
            same(&what("gt"), &a.gt(&b)?, &ac.gt(&bc)?);
            same(
                &what("f32 add"),
                &a32.add(&b.to_dtype(DType::F32)?)?,
                &ac.to_dtype(DType::F32)?.add(&bc.to_dtype(DType::F32)?)?,
            );
            // the mask in a third layout
            let kc = (ka + kb + 1) % KINDS;
            let (c, cv) = make(kc, shape, &mut || gen.uniform() < 0.5)?;
            let cc = Tensor::from_vec(cv, shape.to_vec())?;
            same(
                &what("where"),
                &Tensor::where_cond(&c, &a, &b)?,
                &Tensor::where_cond(&cc, &ac, &bc)?,
            );
            let (bi, biv) = make(kb, shape, &mut || (gen.uniform() * 100.0) as i64)?;
            let (ai, aiv) = make(ka, shape, &mut || (gen.uniform() * 100.0) as i64)?;
            let (aic, bic) =
                (Tensor::from_vec(aiv, shape.to_vec())?, Tensor::from_vec(biv, shape.to_vec())?);
            same(
                &what("where i64"),
                &Tensor::where_cond(&c, &ai, &bi)?,
                &Tensor::where_cond(&cc, &aic, &bic)?,
            );
            same(&what("le i64"), &ai.le(&bi)?, &aic.le(&bic)?);
        }
    }
    Ok(())
}

#[test]
fn strided_elementwise_matches_contiguous_ranks_0_to_4() -> Result<()> {
    let mut gen = Generator::new(7);
    let all: Vec<usize> = (0..KINDS).collect();
    for shape in shapes() {
        check_shape(&shape, &mut gen, &all)?;
    }
    Ok(())
}

#[test]
fn strided_elementwise_matches_contiguous_above_the_parallel_threshold() -> Result<()> {
    let mut gen = Generator::new(8);
    for shape in large_shapes() {
        // contiguous, reversed, mT, stepped, broadcast
        check_shape(&shape, &mut gen, &[0, 1, 3, 4, 5])?;
    }
    Ok(())
}

#[test]
fn implicit_broadcasts_match_contiguous() -> Result<()> {
    let mut gen = Generator::new(9);
    for n in [1, 5, 64, 300] {
        let w = Tensor::randn(n, DType::F64, &mut gen)?;
        let wv = w.to_vec::<f64>()?;
        // the outer difference w_j - w_i of the eigh backward
        let d = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
        let want: Vec<f64> = (0..n * n).map(|k| wv[k % n] - wv[k / n]).collect();
        assert_eq!(d.dims(), [n, n]);
        assert!(d.to_vec::<f64>()?.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()));
        // a matrix times a row and a column, and a transposed matrix minus a row
        let a = Tensor::randn((n, n), DType::F64, &mut gen)?;
        let ac = a.mT()?.contiguous()?;
        let col = w.unsqueeze(-1)?;
        same("mT * row", &a.mT()?.mul(&w)?, &ac.mul(&w.broadcast_to((n, n))?.contiguous()?)?);
        same("mT * col", &a.mT()?.mul(&col)?, &ac.mul(&col.broadcast_to((n, n))?.contiguous()?)?);
        let s = Tensor::from_vec(vec![2.5f64], ())?;
        same("mT - scalar", &a.mT()?.sub(&s)?, &ac.sub(&Tensor::full((n, n), 2.5, DType::F64)?)?);
    }
    Ok(())
}

/// PyTorch's rule for dense inputs: a transposed (column-major) operand gives a result
/// in its own order, computed as one flat loop; mixed orders and other views give a
/// contiguous result.
#[test]
fn dense_permuted_inputs_keep_their_order() -> Result<()> {
    let mut gen = Generator::new(7);
    let a = Tensor::randn((2, 3, 4), DType::F64, &mut gen)?;
    let b = Tensor::randn((2, 3, 4), DType::F64, &mut gen)?;
    let (at, bt) = (a.mT()?, b.mT()?);
    let s = Tensor::full((), 1.5, DType::F64)?;
    for (what, got, want) in [
        ("exp", at.exp()?, at.contiguous()?.exp()?),
        ("mul_scalar", at.mul_scalar(3.0)?, at.contiguous()?.mul_scalar(3.0)?),
        ("add", at.add(&bt)?, at.contiguous()?.add(&bt.contiguous()?)?),
        ("mul scalar tensor", at.mul(&s)?, at.contiguous()?.mul(&s)?),
        ("scalar tensor sub", s.sub(&at)?, s.sub(&at.contiguous()?)?),
    ] {
        assert_eq!(got.strides(), at.strides(), "{what}");
        same(what, &got, &want);
    }
    // mixed orders: a row-major result
    let mixed = at.add(&bt.contiguous()?)?;
    assert!(mixed.is_contiguous());
    same("mixed", &mixed, &at.contiguous()?.add(&bt.contiguous()?)?);
    // a permutation of three dims keeps it too, and sums over it agree
    let p = a.permute(&[2, 0, 1])?;
    let e = p.square()?;
    assert_eq!(e.strides(), p.strides());
    same("permuted square", &e, &p.contiguous()?.square()?);
    Ok(())
}

#[test]
fn strided_results_do_not_depend_on_the_thread_count() {
    let run = |threads: usize| -> Vec<Vec<u64>> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut gen = Generator::new(10);
            let a = Tensor::randn((5000, 4, 4), DType::F64, &mut gen).unwrap();
            let b = Tensor::randn((400, 300), DType::F64, &mut gen).unwrap();
            let m = b.gt_scalar(0.0).unwrap();
            let c = Tensor::randn((300, 400), DType::F64, &mut gen).unwrap().mT().unwrap();
            vec![
                bits(&a.sub(&a.mT().unwrap()).unwrap()),
                bits(&a.mT().unwrap().exp().unwrap()),
                bits(&b.slice(1, 0, 300, 3).unwrap().mul(&b.slice(1, 1, 300, 3).unwrap()).unwrap()),
                bits(&Tensor::where_cond(&m, &b, &c).unwrap()),
                bits(&b.mT().unwrap().contiguous().unwrap()),
            ]
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
}
