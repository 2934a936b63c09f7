//! The census: every construction of an `Error` variant with an `op` in the library's
//! source, found by scanning the text (comments, string contents and `#[cfg(test)]`
//! items masked out).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a construction's `op` is: a literal (or a `const` of the file holding one), or
/// something else (a parameter, a macro argument, a trait constant), named by its site.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// The op's name, known in the source.
    Op(String),
    /// `relative/path.rs::enclosing_fn`: the op comes from the caller.
    Site(String),
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Op(s) => write!(f, "op {s:?}"),
            Key::Site(s) => write!(f, "site {s}"),
        }
    }
}

/// The census: each (variant, key) with the `file:line`s that construct it.
pub type Census = BTreeMap<(String, Key), BTreeSet<String>>;

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The source with comments, the contents of string and char literals, and non-ASCII
/// bytes replaced by spaces (newlines kept), so that offsets match the original text.
pub fn mask(src: &str) -> Vec<u8> {
    let s = src.as_bytes();
    let mut m = s.to_vec();
    let n = s.len();
    let blank = |m: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut m[from..to.min(n)] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < n {
        let c = s[i];
        if c == b'/' && s.get(i + 1) == Some(&b'/') {
            let end = s[i..].iter().position(|&b| b == b'\n').map_or(n, |k| i + k);
            blank(&mut m, i, end);
            i = end;
        } else if c == b'/' && s.get(i + 1) == Some(&b'*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < n && depth > 0 {
                if s[j] == b'/' && s.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == b'*' && s.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut m, i, j);
            i = j;
        } else if c == b'r'
            && (i == 0
                || !is_ident(s[i - 1])
                || (s[i - 1] == b'b' && (i < 2 || !is_ident(s[i - 2]))))
            && matches!(s.get(i + 1), Some(b'"' | b'#'))
        {
            // a raw string r"..." or r#"..."#
            let hashes = s[i + 1..].iter().take_while(|&&b| b == b'#').count();
            if s.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let start = i + 2 + hashes;
            let mut j = start;
            loop {
                if j >= n {
                    break;
                }
                if s[j] == b'"'
                    && s[j + 1..].iter().take(hashes).filter(|&&b| b == b'#').count() == hashes
                {
                    break;
                }
                j += 1;
            }
            blank(&mut m, start, j);
            i = j + 1 + hashes;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < n && s[j] != b'"' {
                j += if s[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut m, i + 1, j);
            i = j + 1;
        } else if c == b'\'' {
            // a char literal ('x', '\n', 'é') or a lifetime ('a)
            if s.get(i + 1) == Some(&b'\\') {
                let mut j = i + 3;
                while j < n && s[j] != b'\'' {
                    j += 1;
                }
                blank(&mut m, i + 1, j);
                i = j + 1;
            } else {
                let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                if s.get(i + 1 + len) == Some(&b'\'') {
                    blank(&mut m, i + 1, i + 1 + len);
                    i += 2 + len;
                } else {
                    i += 1;
                }
            }
        } else {
            if !c.is_ascii() {
                m[i] = b' ';
            }
            i += 1;
        }
    }
    m
}

/// The matching close of every `{`, `(` and `[` (by offset) in masked text.
fn matching(m: &[u8]) -> BTreeMap<usize, usize> {
    let mut out = BTreeMap::new();
    let mut stack = Vec::new();
    for (i, &b) in m.iter().enumerate() {
        match b {
            b'{' | b'(' | b'[' => stack.push(i),
            b'}' | b')' | b']' => {
                if let Some(o) = stack.pop() {
                    out.insert(o, i);
                }
            }
            _ => {}
        }
    }
    out
}

fn skip_ws(m: &[u8], mut i: usize) -> usize {
    while i < m.len() && m[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn ident_at(m: &[u8], i: usize) -> &str {
    let end = m[i..].iter().position(|&b| !is_ident(b)).map_or(m.len(), |k| i + k);
    std::str::from_utf8(&m[i..end]).unwrap_or("")
}

/// Offsets where the word `w` starts (not inside a longer identifier).
fn words<'a>(m: &'a [u8], w: &'a str) -> impl Iterator<Item = usize> + 'a {
    let w = w.as_bytes();
    (0..m.len().saturating_sub(w.len() - 1)).filter(move |&i| {
        m[i..].starts_with(w)
            && (i == 0 || !is_ident(m[i - 1]))
            && m.get(i + w.len()).is_none_or(|&b| !is_ident(b) || !is_ident(w[w.len() - 1]))
    })
}

/// The ranges of the items under `#[cfg(test)]`.
fn test_ranges(m: &[u8], close: &BTreeMap<usize, usize>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for at in words(m, "#[cfg(test)]") {
        let mut j = at;
        while j < m.len() && m[j] != b';' && m[j] != b'{' {
            j += 1;
        }
        let end =
            if m.get(j) == Some(&b'{') { close.get(&j).copied().unwrap_or(m.len()) } else { j };
        out.push((at, end));
    }
    out
}

/// The `const NAME: &str = "value"` of a file: name, value and the block it is seen in.
fn str_consts(
    text: &str,
    m: &[u8],
    close: &BTreeMap<usize, usize>,
) -> Vec<(String, String, (usize, usize))> {
    let mut out = Vec::new();
    for at in words(m, "const") {
        let i = skip_ws(m, at + 5);
        let name = ident_at(m, i).to_string();
        let rest = std::str::from_utf8(&m[i + name.len()..]).unwrap_or("");
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix(':') else { continue };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix("&'static str").or_else(|| rest.strip_prefix("&str"))
        else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix('=') else { continue };
        let q = m.len() - rest.len() + (rest.len() - rest.trim_start().len());
        if m.get(q) != Some(&b'"') {
            continue;
        }
        let end = text[q + 1..].find('"').map_or(text.len(), |k| q + 1 + k);
        // the innermost block around the definition
        let scope = close
            .iter()
            .filter(|(&o, &c)| m[o] == b'{' && o < at && at < c)
            .max_by_key(|(&o, _)| o)
            .map_or((0, m.len()), |(&o, &c)| (o, c));
        out.push((name, text[q + 1..end].to_string(), scope));
    }
    out
}

/// The name of the function (or `macro!`) a site is in: the nearest preceding `fn NAME`
/// or `macro_rules! NAME`.
fn enclosing(m: &[u8], at: usize) -> String {
    let f = words(&m[..at], "fn").last().map(|i| (i, ident_at(m, skip_ws(m, i + 2)).to_string()));
    let mr = words(&m[..at], "macro_rules!")
        .last()
        .map(|i| (i, format!("{}!", ident_at(m, skip_ws(m, i + 12)))));
    match (f, mr) {
        (Some(f), Some(mr)) => {
            if f.0 > mr.0 {
                f.1
            } else {
                mr.1
            }
        }
        (Some(x), None) | (None, Some(x)) => x.1,
        (None, None) => "?".to_string(),
    }
}

/// The fields of a struct expression's body, split at top-level commas.
fn fields(m: &[u8], from: usize, to: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, from);
    for (i, &b) in m.iter().enumerate().take(to).skip(from) {
        match b {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                out.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((start, to));
    out
}

/// Scans one file (its path relative to `src/` given as `rel`) into `census`.
pub fn scan_file(rel: &str, text: &str, census: &mut Census) {
    let m = mask(text);
    let close = matching(&m);
    let tests = test_ranges(&m, &close);
    let consts = str_consts(text, &m, &close);
    let line = |at: usize| text[..at].bytes().filter(|&b| b == b'\n').count() + 1;
    for at in words(&m, "Error") {
        if !m[at + 5..].starts_with(b"::") || tests.iter().any(|&(a, b)| a <= at && at <= b) {
            continue;
        }
        let v = at + 7;
        let variant = ident_at(&m, v).to_string();
        let open = skip_ws(&m, v + variant.len());
        if variant.is_empty() || variant == "Internal" || m.get(open) != Some(&b'{') {
            continue;
        }
        let Some(&end) = close.get(&open) else { continue };
        let body = &m[open + 1..end];
        // a pattern (`Error::X { batch, .. }`, `Error::X { .. } =>`), not a construction
        let mut after = skip_ws(&m, end + 1);
        while m.get(after) == Some(&b')') {
            after = skip_ws(&m, after + 1);
        }
        if body.windows(2).any(|w| w == b"..") || m[after..].starts_with(b"=>") {
            continue;
        }
        let mut op = None;
        for (a, b) in fields(&m, open + 1, end) {
            let f = text[a..b].trim();
            if f == "op" {
                op = Some(None);
            } else if let Some(rest) = f.strip_prefix("op") {
                let rest = rest.trim_start();
                if let Some(e) = rest.strip_prefix(':').filter(|r| !r.starts_with(':')) {
                    op = Some(Some(e.trim().to_string()));
                }
            }
        }
        // a variant without an op field
        let Some(op) = op else { continue };
        let key = match op {
            Some(e) if e.starts_with('"') && e.ends_with('"') && e.len() >= 2 => {
                Key::Op(e[1..e.len() - 1].to_string())
            }
            Some(e)
                if !e.is_empty()
                    && e.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
            {
                let found = consts
                    .iter()
                    .filter(|(n, _, (o, c))| *n == e && *o <= at && at <= *c)
                    .max_by_key(|(_, _, (o, _))| *o);
                match found {
                    Some((_, value, _)) => Key::Op(value.clone()),
                    None => Key::Site(format!("{rel}::{}", enclosing(&m, at))),
                }
            }
            _ => Key::Site(format!("{rel}::{}", enclosing(&m, at))),
        };
        census.entry((variant, key)).or_default().insert(format!("{rel}:{}", line(at)));
    }
}

/// The census of every `.rs` file under `src` but `error.rs`, and of no file of a
/// `tests` module.
pub fn census(src: &Path) -> Census {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut census = Census::new();
    for p in files {
        let rel = p.strip_prefix(src).expect("under src").to_string_lossy().replace('\\', "/");
        if rel == "error.rs" || rel.split('/').any(|c| c == "tests" || c == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {rel}: {e}"));
        scan_file(&rel, &text, &mut census);
    }
    census
}
