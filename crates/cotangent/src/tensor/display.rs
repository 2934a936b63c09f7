//! PyTorch-like printing: `tensor([[1.0000, 2.0000], ...], dtype=f64, requires_grad=true)`.

use super::Tensor;
use crate::dtype::DType;

const SUMMARIZE_ABOVE: usize = 1000;
const EDGE: usize = 3;

fn fmt_value(v: f64, int_like: bool, sci: bool, dtype: DType) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match dtype {
        DType::Bool => if v == 0.0 { "False" } else { "True" }.into(),
        DType::I64 => format!("{}", v as i64),
        _ if int_like => format!("{v:.0}."),
        _ if sci => format!("{v:.4e}"),
        _ => format!("{v:.4}"),
    }
}

/// The elements of `vals` as PyTorch prints them: as integers with a trailing `.` if all
/// finite ones are, else with 4 decimals, or in scientific notation when their magnitudes
/// are far apart.
fn fmt_all(vals: &[f64], dtype: DType) -> Vec<String> {
    let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
    let int_like = finite.iter().all(|v| v.fract() == 0.0 && v.abs() < 1e8);
    let max = finite.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let min = finite.iter().filter(|v| **v != 0.0).fold(f64::INFINITY, |a, v| a.min(v.abs()));
    let sci = !int_like && (max >= 1e8 || (min < 1e-4 && min.is_finite()) || max / min > 1000.0);
    vals.iter().map(|&v| fmt_value(v, int_like, sci, dtype)).collect()
}

impl std::fmt::Display for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dtype = self.dtype();
        let (vals, strs) = if dtype.is_complex() {
            // `re±imj`, the real and the imaginary parts each formatted as a whole (as
            // PyTorch does)
            let part =
                |t: Result<Tensor, crate::Error>| t.map(|t| t.to_vec_f64()).unwrap_or_default();
            let (re, im) = (part(self.real()), part(self.imag()));
            let abs_im: Vec<f64> = im.iter().map(|v| v.abs()).collect();
            let (rs, is) = (fmt_all(&re, dtype), fmt_all(&abs_im, dtype));
            let strs = rs
                .iter()
                .zip(&is)
                .zip(&im)
                .map(|((r, i), v)| {
                    format!(
                        "{r}{}{i}j",
                        if v.is_sign_negative() && !v.is_nan() { '-' } else { '+' }
                    )
                })
                .collect();
            (re, strs)
        } else {
            let vals = self.to_vec_f64();
            let strs = fmt_all(&vals, dtype);
            (vals, strs)
        };
        let width = strs.iter().map(String::len).max().unwrap_or(0);
        let summarize = vals.len() > SUMMARIZE_ABOVE;
        let dims = self.dims();
        let strides = self.shape().contiguous_strides();
        let mut out = String::from("tensor(");
        fn rec(
            out: &mut String,
            strs: &[String],
            dims: &[usize],
            strides: &[usize],
            base: usize,
            depth: usize,
            width: usize,
            summarize: bool,
        ) {
            if dims.is_empty() {
                out.push_str(&format!("{:>width$}", strs[base]));
                return;
            }
            out.push('[');
            let n = dims[0];
            let indices: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
                (0..EDGE).map(Some).chain([None]).chain((n - EDGE..n).map(Some)).collect()
            } else {
                (0..n).map(Some).collect()
            };
            for (k, i) in indices.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                    if dims.len() > 1 {
                        out.push_str(&"\n".repeat(dims.len() - 1));
                        out.push_str(&" ".repeat(7 + depth + 1));
                    } else {
                        out.push(' ');
                    }
                }
                match i {
                    Some(i) => rec(
                        out,
                        strs,
                        &dims[1..],
                        &strides[1..],
                        base + i * strides[0],
                        depth + 1,
                        width,
                        summarize,
                    ),
                    None => out.push_str("..."),
                }
            }
            out.push(']');
        }
        if vals.is_empty() {
            out.push_str(&format!("[], size={}", self.shape()));
        } else {
            rec(&mut out, &strs, dims, &strides, 0, 0, width, summarize);
        }
        // (PyTorch's defaults: f32, and c64 its complex counterpart)
        if !matches!(dtype, DType::F32 | DType::C64 | DType::I64 | DType::Bool) || vals.is_empty() {
            out.push_str(&format!(", dtype={dtype}"));
        }
        if let Some(name) = self.grad_fn_name() {
            out.push_str(&format!(", grad_fn=<{name}>"));
        } else if self.requires_grad() {
            out.push_str(", requires_grad=True");
        }
        out.push(')');
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Tensor};

    #[test]
    fn prints_like_pytorch() {
        let t = Tensor::from_vec(vec![1.0f64, 2.5, 3.0, 4.0], (2, 2)).unwrap();
        assert_eq!(
            t.to_string(),
            "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]], dtype=f64)"
        );
        let t = Tensor::from_vec(vec![1.0f32, 2.0], 2).unwrap();
        assert_eq!(t.to_string(), "tensor([1., 2.])");
        let t = Tensor::scalar(3i64);
        assert_eq!(t.to_string(), "tensor(3)");
        let t = Tensor::zeros((0, 3), DType::F32).unwrap();
        assert_eq!(t.to_string(), "tensor([], size=[0, 3], dtype=f32)");
        let big = Tensor::zeros(2000, DType::F32).unwrap().to_string();
        assert!(big.contains("..."));
        // torch.tensor([1+2j, 3-4j], dtype=torch.complex128) and [1.5+2j, -0.25-4j] (c64)
        let c = |re: Vec<f64>, im: Vec<f64>| {
            let n = re.len();
            Tensor::complex(&Tensor::from_vec(re, n).unwrap(), &Tensor::from_vec(im, n).unwrap())
                .unwrap()
        };
        assert_eq!(
            c(vec![1.0, 3.0], vec![2.0, -4.0]).to_string(),
            "tensor([1.+2.j, 3.-4.j], dtype=c128)"
        );
        let z = c(vec![1.5, -0.25], vec![2.0, -4.0]).to_dtype(DType::C64).unwrap();
        assert_eq!(z.to_string(), "tensor([ 1.5000+2.j, -0.2500-4.j])");
    }
}
