//! Feeds arbitrary bytes to the runner's stream reader, line parser and dispatcher: every
//! non-blank line must get exactly one answer, each a JSON object with an `id` and either
//! outputs or an error of a protocol kind, and nothing may panic (libFuzzer aborts on a
//! panic, including one caught by the runner's safety net) or run away (`-timeout`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let answered = cotangent_parity::run(data, &mut out).expect("writing to a Vec cannot fail");
    let expected = data
        .split(|&b| b == b'\n')
        .filter(|l| !std::str::from_utf8(l).is_ok_and(|s| s.trim().is_empty()))
        .count();
    assert_eq!(answered, expected, "one answer per non-blank line");
    let text = std::str::from_utf8(&out).expect("answers are UTF-8");
    assert_eq!(text.lines().count(), answered);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("an answer is JSON");
        assert!(v.get("id").is_some(), "an answer has an id: {line}");
        match v.get("error") {
            Some(serde_json::Value::Null) => assert!(v.get("outputs").is_some(), "{line}"),
            Some(e) => {
                let kind = e["kind"].as_str().expect("an error has a kind");
                assert!(cotangent_parity::Kind::from_name(kind).is_some(), "{line}");
            }
            None => panic!("an answer has an error member: {line}"),
        }
    }
});
