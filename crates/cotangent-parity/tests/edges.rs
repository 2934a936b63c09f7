//! Edge cases of the runner, in process: exact numbers, identity ops, empty views,
//! gradients of inputs that do not reach an output, errors and ids.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent_parity::run_line;
use serde_json::Value;

fn run(case: &str) -> Value {
    serde_json::from_str(&run_line(case)).expect("the answer is JSON")
}

fn data(v: &Value) -> Vec<String> {
    v["data"].as_array().expect("data").iter().map(Value::to_string).collect()
}

#[test]
fn f32_decimals_are_parsed_to_the_nearest_f32_and_printed_shortest() {
    // 16777217 is halfway between two f32s: nearest-even gives 16777216; and a decimal
    // just above the halfway point must round up, which parsing through f64 would miss
    let r = run(r#"{"id": "x", "op": "neg", "inputs": [{"dtype": "f32", "shape": [3],
        "data": [16777217, 16777217.000000000001, 0.1]}]}"#);
    assert_eq!(data(&r["outputs"][0]), ["-16777216.0", "-16777218.0", "-0.1"]);
}

#[test]
fn f64_values_round_trip_exactly() {
    let xs = ["5e-324", "1.7976931348623157e308", "0.30000000000000004", "-0.0", "1e-7"];
    let case = format!(
        r#"{{"op": "reshape", "inputs": [{{"dtype": "f64", "shape": [5], "data": [{}]}}], "attrs": {{"shape": [5]}}}}"#,
        xs.join(",")
    );
    let r = run(&case);
    let got: Vec<f64> =
        data(&r["outputs"][0]).iter().map(|s| s.parse().expect("a number")).collect();
    let want: Vec<f64> = xs.iter().map(|s| s.parse().expect("a number")).collect();
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn non_finite_values_are_strings() {
    let r =
        run(r#"{"op": "log", "inputs": [{"dtype": "f64", "shape": [3], "data": [0, -1, "inf"]}]}"#);
    assert_eq!(data(&r["outputs"][0]), ["\"-inf\"", "\"nan\"", "\"inf\""]);
}

#[test]
fn identity_ops_give_the_cotangent_back() {
    for (op, attrs) in [
        ("reshape", r#"{"shape": [2]}"#),
        ("permute", r#"{"dims": [0]}"#),
        ("to", r#"{"dtype": "f64"}"#),
        ("expand", r#"{"size": [2]}"#),
        ("narrow", r#"{"dim": 0, "start": 0, "length": 2}"#),
        ("flip", r#"{"dims": []}"#),
    ] {
        let r = run(&format!(
            r#"{{"op": "{op}", "inputs": [{{"dtype": "f64", "shape": [2], "data": [1, 2]}}], "attrs": {attrs},
               "cotangents": [{{"dtype": "f64", "shape": [2], "data": [3, 4]}}]}}"#
        ));
        assert!(r["error"].is_null(), "{op}: {r}");
        assert_eq!(data(&r["grads"][0]), ["3.0", "4.0"], "{op}");
    }
}

#[test]
fn empty_views_at_an_offset() {
    let r = run(r#"{"op": "split", "inputs": [{"dtype": "f64", "shape": [3, 0], "data": []}],
        "attrs": {"split_size_or_sections": 1},
        "cotangents": [null, {"dtype": "f64", "shape": [1, 0], "data": []}, null]}"#);
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["outputs"].as_array().map(Vec::len), Some(3));
    assert_eq!(r["grads"][0]["shape"], serde_json::json!([3, 0]));
}

#[test]
fn unreached_inputs_get_zero_gradients_and_integers_none() {
    let r = run(r#"{"op": "cat", "inputs": [[{"dtype": "f64", "shape": [2], "data": [1, 2]},
        {"dtype": "f64", "shape": [0], "data": []}]],
        "cotangents": [{"dtype": "f64", "shape": [2], "data": [5, 6]}]}"#);
    assert_eq!(data(&r["grads"][0][0]), ["5.0", "6.0"]);
    assert_eq!(r["grads"][0][1]["shape"], serde_json::json!([0]));
    let r = run(r#"{"op": "gather", "inputs": [{"dtype": "f64", "shape": [3], "data": [1, 2, 3]},
        {"dtype": "i64", "shape": [2], "data": [2, 2]}], "attrs": {"dim": 0},
        "cotangents": [{"dtype": "f64", "shape": [2], "data": [1, 1]}]}"#);
    assert_eq!(data(&r["grads"][0]), ["0.0", "0.0", "2.0"]);
    assert!(r["grads"][1].is_null());
}

#[test]
fn requires_grad_false_gives_null() {
    let r = run(r#"{"op": "mul", "inputs": [{"dtype": "f64", "shape": [], "data": [2]},
        {"dtype": "f64", "shape": [], "data": [3], "requires_grad": false}],
        "cotangents": [{"dtype": "f64", "shape": [], "data": [1]}]}"#);
    assert_eq!(data(&r["grads"][0]), ["3.0"]);
    assert!(r["grads"][1].is_null());
}

#[test]
fn forward_only_has_no_grads() {
    let r = run(
        r#"{"id": 5, "op": "sum", "inputs": [{"dtype": "f64", "shape": [2], "data": [1, 2]}]}"#,
    );
    assert_eq!(r["id"], 5);
    assert!(r.get("grads").is_none());
    assert!(r["error"].is_null());
}

#[test]
fn composed_attributes() {
    // add with alpha, rsub, pad with a value (including inf), norm with keepdim
    let x = r#"{"dtype": "f64", "shape": [2], "data": [1, 2]}"#;
    let r = run(&format!(r#"{{"op": "add", "inputs": [{x}, {x}], "attrs": {{"alpha": 3}}}}"#));
    assert_eq!(data(&r["outputs"][0]), ["4.0", "8.0"]);
    let r =
        run(&format!(r#"{{"op": "rsub", "inputs": [{x}], "attrs": {{"other": 10, "alpha": 2}}}}"#));
    assert_eq!(data(&r["outputs"][0]), ["8.0", "6.0"]);
    let r = run(&format!(
        r#"{{"op": "nn.functional.pad", "inputs": [{x}], "attrs": {{"pad": [1, 0], "value": "-inf"}}}}"#
    ));
    assert_eq!(data(&r["outputs"][0]), ["\"-inf\"", "1.0", "2.0"]);
    let r = run(&format!(r#"{{"op": "norm", "inputs": [{x}], "attrs": {{"keepdim": true}}}}"#));
    assert_eq!(r["outputs"][0]["shape"], serde_json::json!([1]));
}

#[test]
fn errors_name_the_op_and_keep_the_id() {
    let r = run(
        r#"{"id": "e", "op": "transpose", "inputs": [{"dtype": "f64", "shape": [2], "data": [1, 2]}], "attrs": {"dim0": 0, "dim1": 5}}"#,
    );
    assert_eq!(r["id"], "e");
    assert_eq!(r["error"]["kind"], "InvalidArgument");
    assert!(r["error"]["message"].as_str().is_some_and(|m| m.starts_with("transpose")));
    assert!(r.get("outputs").is_none());
}

#[test]
fn linalg_outputs_beyond_the_limits_are_refused_before_computing() {
    let vec = |n: usize| {
        format!(r#"{{"dtype": "f64", "shape": [{n}], "data": [{}]}}"#, vec!["0"; n].join(","))
    };
    let mat = |m: usize, n: usize| {
        format!(
            r#"{{"dtype": "f64", "shape": [{m}, {n}], "data": [{}]}}"#,
            vec!["0"; m * n].join(",")
        )
    };
    for (op, inputs, attrs) in [
        ("outer", format!("[{}, {}]", vec(4096), vec(4096)), "{}".to_string()),
        ("matmul", format!("[{}, {}]", mat(4096, 1), mat(1, 4096)), "{}".to_string()),
        ("addr", format!("[{}, {}, {}]", vec(1), vec(4096), vec(4096)), "{}".to_string()),
        ("diag_embed", format!("[{}]", vec(1)), r#"{"offset": 100000}"#.to_string()),
        ("linalg.vander", format!("[{}]", vec(2)), r#"{"N": 1000000000000}"#.to_string()),
        ("kron", format!("[{}, {}]", vec(4096), vec(4096)), "{}".to_string()),
        (
            "linalg.matrix_power",
            format!("[{}]", mat(1024, 1024)),
            r#"{"n": 4611686018427387904}"#.to_string(),
        ),
        ("linalg.lu", format!("[{}]", mat(4096, 1)), "{}".to_string()),
    ] {
        let r = run(&format!(r#"{{"op": "{op}", "inputs": {inputs}, "attrs": {attrs}}}"#));
        assert_eq!(r["error"]["kind"], "BadCase", "{op}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("limit"), "{op}: {r}");
    }
    // and PyTorch's own refusal
    let r =
        run(&format!(r#"{{"op": "linalg.vander", "inputs": [{}], "attrs": {{"N": 1}}}}"#, vec(3)));
    assert_eq!(r["error"]["kind"], "InvalidArgument", "{r}");
}

#[test]
fn cotangents_on_outputs_pytorch_does_not_differentiate_are_ignored() {
    // lstsq: the residuals are differentiable (their cotangent counts); the rank (an
    // integer) and the singular values (PyTorch records no gradient) add nothing
    let case = |cot_rank: &str, cot_sv: &str| {
        format!(
            r#"{{"op": "linalg.lstsq", "attrs": {{"driver": "gelsd"}}, "inputs": [
            {{"dtype": "f64", "shape": [3, 2], "data": [1, 0, 0, 1, 1, 1]}},
            {{"dtype": "f64", "shape": [3, 1], "data": [1, 2, 4]}}],
            "cotangents": [null, {{"dtype": "f64", "shape": [1], "data": [1]}}, {cot_rank}, {cot_sv}]}}"#
        )
    };
    let bare = run(&case("null", "null"));
    assert!(bare["error"].is_null(), "{bare}");
    let with = run(&case(
        r#"{"dtype": "i64", "shape": [], "data": [7]}"#,
        r#"{"dtype": "f64", "shape": [2], "data": [3, 4]}"#,
    ));
    assert!(with["error"].is_null(), "{with}");
    assert_eq!(bare["grads"], with["grads"]);
    // the residual's gradient w.r.t. B is −2 (A x − b): nonzero here
    assert!(data(&bare["grads"][1]).iter().any(|x| x != "0.0" && x != "-0.0"));
    // an integer output's cotangent on an op with no differentiable output: no gradient
    let r = run(r#"{"op": "eq", "inputs": [{"dtype": "f64", "shape": [2], "data": [1, 2]},
        {"dtype": "f64", "shape": [2], "data": [1, 3]}],
        "cotangents": [{"dtype": "bool", "shape": [2], "data": [true, false]}]}"#);
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(data(&r["grads"][0]), ["0.0", "0.0"]);
}

#[test]
fn tangents_give_jvps_beside_grads() {
    // y = x * w: ẏ = ẋ w + x ẇ; the constant input's tangent is null; an integer output's
    // jvp is null; cotangents and tangents together give both, each as if alone
    let r = run(r#"{"id": "t", "op": "mul", "inputs": [
        {"dtype": "f64", "shape": [2], "data": [1, 2]},
        {"dtype": "f64", "shape": [2], "data": [3, 4]}],
        "tangents": [{"dtype": "f64", "shape": [2], "data": [1, 0]}, null],
        "cotangents": [{"dtype": "f64", "shape": [2], "data": [1, 1]}]}"#);
    assert_eq!(data(&r["jvps"][0]), ["3.0", "0.0"]);
    assert_eq!(data(&r["grads"][0]), ["3.0", "4.0"]);
    let r = run(r#"{"id": "l", "op": "linalg.lu_factor", "inputs": [
        {"dtype": "f64", "shape": [2, 2], "data": [1, 2, 3, 4]}],
        "tangents": [{"dtype": "f64", "shape": [2, 2], "data": [1, 0, 0, 1]}]}"#);
    assert!(r["jvps"][0].is_object(), "{r}");
    assert!(r["jvps"][1].is_null(), "{r}");
    // malformed tangents: named errors
    for (tangents, what) in [
        ("[]", "tangents for"),
        (r#"[{"dtype": "f32", "shape": [2], "data": [1, 0]}]"#, "its input is"),
        (r#"{"a": 1}"#, "must be a list"),
    ] {
        let r = run(&format!(
            r#"{{"id": "m", "op": "neg", "inputs": [{{"dtype": "f64", "shape": [2], "data": [1, 2]}}],
            "tangents": {tangents}}}"#
        ));
        let msg = r["error"]["message"].as_str().unwrap_or_default().to_string();
        assert!(msg.contains(what), "{tangents}: {r}");
    }
}
