//! Quoting input in messages: every error, log line and report that echoes a key, a flag, an
//! environment value or a name from a file quotes it through [`excerpt`], so a hostile value
//! cannot flood the terminal or steer it (escape sequences, bidirectional overrides).

/// Characters of input a message quotes at most.
pub const EXCERPT_CHARS: usize = 80;

/// At most [`EXCERPT_CHARS`] characters of `s`, with control, format (U+202E and the other
/// bidirectional controls) and other unprintable characters escaped as Rust's `{:?}` writes them;
/// a longer input ends in `... (N bytes)`.
pub fn excerpt(s: &str) -> String {
    let mut out = String::new();
    for (shown, c) in s.chars().enumerate() {
        if shown == EXCERPT_CHARS {
            out.push_str(&format!("... ({} bytes)", s.len()));
            return out;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// `s` with control and format characters escaped as in [`excerpt`], not shortened: for file
/// paths, which the file system already bounds.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// Appends `c`, escaped as `{:?}` writes it unless it is a quote or a backslash: those
/// `escape_debug` would escape too, but they cannot steer a terminal, so they stay as typed.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '"' | '\'' | '\\' => out.push(c),
        _ => out.extend(c.escape_debug()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_and_escaped() {
        assert_eq!(excerpt("FP16"), "FP16");
        assert_eq!(excerpt("it's \"x\""), "it's \"x\"");
        assert_eq!(excerpt("a\u{1b}]0;pwned\u{7}b"), "a\\u{1b}]0;pwned\\u{7}b");
        assert_eq!(excerpt("ab\u{202e}cd"), "ab\\u{202e}cd");
        assert_eq!(excerpt("l1\nl2\r\t"), "l1\\nl2\\r\\t");
        let long = "A".repeat(120_000);
        let e = excerpt(&long);
        assert_eq!(e, format!("{}... (120000 bytes)", "A".repeat(80)));
        // Escapes count as one character each: the bound holds for control-only input.
        assert!(excerpt(&"\u{1b}".repeat(10_000)).len() < 80 * 8 + 30);
        assert_eq!(excerpt("é🙂"), "é🙂");
        assert_eq!(escaped(&"a\u{1b}".repeat(100)), "a\\u{1b}".repeat(100));
    }
}
