//! A small, dependency-free PEP 440 version parser.
//!
//! neurarrow requires every version string (the core `version` key and every
//! `{ext}:version` key) to conform to PEP 440. This module accepts every spelling
//! PEP 440 accepts (leading `v`, `-`/`_`/`.` separators, alternative pre-release
//! spellings, implicit numbers) and renders the normalised form, so callers can
//! warn when a string is valid but not normalised.

use std::fmt;

/// A parsed PEP 440 version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Epoch (`N!`), 0 when absent.
    pub epoch: u64,
    /// Release segment, at least one component.
    pub release: Vec<u64>,
    /// Pre-release: normalised label (`a`, `b`, `rc`) and number.
    pub pre: Option<(&'static str, u64)>,
    /// Post-release number.
    pub post: Option<u64>,
    /// Development-release number.
    pub dev: Option<u64>,
    /// Local version label, normalised (lowercase, `.` separators).
    pub local: Option<String>,
}

impl Version {
    /// Major component (first release component).
    pub fn major(&self) -> u64 {
        self.release[0]
    }

    /// Minor component (second release component, 0 when absent).
    pub fn minor(&self) -> u64 {
        self.release.get(1).copied().unwrap_or(0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        for (i, r) in self.release.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{r}")?;
        }
        if let Some((l, n)) = self.pre {
            write!(f, "{l}{n}")?;
        }
        if let Some(n) = self.post {
            write!(f, ".post{n}")?;
        }
        if let Some(n) = self.dev {
            write!(f, ".dev{n}")?;
        }
        if let Some(l) = &self.local {
            write!(f, "+{l}")?;
        }
        Ok(())
    }
}

/// Why a string is not a PEP 440 version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> Option<Result<u64, ParseError>> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if start == self.i {
            return None;
        }
        let mut v: u64 = 0;
        for &d in &self.s[start..self.i] {
            v = match v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
            {
                Some(v) => v,
                None => return Some(Err(ParseError("version component too large".into()))),
            };
        }
        Some(Ok(v))
    }

    /// Matches one of `words` (already lowercase) case-insensitively; longest first.
    fn word(&mut self, words: &[&'static str]) -> Option<&'static str> {
        for w in words {
            let end = self.i + w.len();
            if end <= self.s.len() && self.s[self.i..end].eq_ignore_ascii_case(w.as_bytes()) {
                self.i = end;
                return Some(w);
            }
        }
        None
    }

    /// Optional separator then a word; restores the position when the word is absent.
    fn sep_word(&mut self, words: &[&'static str]) -> Option<&'static str> {
        let save = self.i;
        if matches!(self.peek(), Some(b'-' | b'_' | b'.')) {
            self.i += 1;
        }
        match self.word(words) {
            Some(w) => Some(w),
            None => {
                self.i = save;
                None
            }
        }
    }

    /// Optional separator then an optional number (implicit 0).
    fn sep_number(&mut self) -> Result<u64, ParseError> {
        let save = self.i;
        if matches!(self.peek(), Some(b'-' | b'_' | b'.')) {
            self.i += 1;
        }
        match self.number() {
            Some(r) => r,
            None => {
                self.i = save;
                Ok(0)
            }
        }
    }
}

/// Parses a PEP 440 version (surrounding whitespace allowed, as PEP 440 says).
pub fn parse(input: &str) -> Result<Version, ParseError> {
    let trimmed = input.trim();
    let bad = || ParseError(format!("{input:?} is not a PEP 440 version"));
    let mut c = Cursor {
        s: trimmed.as_bytes(),
        i: 0,
    };
    if matches!(c.peek(), Some(b'v' | b'V')) {
        c.i += 1;
    }
    let first = c.number().ok_or_else(bad)??;
    let (epoch, first) = if c.eat(b'!') {
        (first, c.number().ok_or_else(bad)??)
    } else {
        (0, first)
    };
    let mut release = vec![first];
    loop {
        let save = c.i;
        if c.eat(b'.') {
            match c.number() {
                Some(n) => release.push(n?),
                None => {
                    c.i = save;
                    break;
                }
            }
        } else {
            break;
        }
    }
    let pre = match c.sep_word(&["preview", "alpha", "beta", "pre", "rc", "a", "b", "c"]) {
        Some(label) => {
            let norm = match label {
                "alpha" | "a" => "a",
                "beta" | "b" => "b",
                _ => "rc",
            };
            Some((norm, c.sep_number()?))
        }
        None => None,
    };
    let post = {
        let save = c.i;
        if c.eat(b'-') && matches!(c.peek(), Some(b'0'..=b'9')) {
            Some(c.number().ok_or_else(bad)??)
        } else {
            c.i = save;
            match c.sep_word(&["post", "rev", "r"]) {
                Some(_) => Some(c.sep_number()?),
                None => None,
            }
        }
    };
    let dev = match c.sep_word(&["dev"]) {
        Some(_) => Some(c.sep_number()?),
        None => None,
    };
    let local = if c.eat(b'+') {
        let rest = &trimmed[c.i..];
        let mut parts = Vec::new();
        for part in rest.split(['-', '_', '.']) {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(bad());
            }
            // Numeric local segments are compared as integers; keep them as written
            // but lowercase the alphanumeric ones.
            parts.push(part.to_ascii_lowercase());
        }
        c.i = c.s.len();
        Some(parts.join("."))
    } else {
        None
    };
    if c.i != c.s.len() {
        return Err(bad());
    }
    Ok(Version {
        epoch,
        release,
        pre,
        post,
        dev,
        local,
    })
}

/// True when `input` is already in PEP 440 normal form.
pub fn is_normalized(input: &str) -> bool {
    parse(input).is_ok_and(|v| v.to_string() == input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_normalises() {
        for (s, n) in [
            ("0.2.1", "0.2.1"),
            ("0.2", "0.2"),
            ("v0.2.1", "0.2.1"),
            ("1.0-alpha.1", "1.0a1"),
            ("1.0.PREVIEW2", "1.0rc2"),
            ("1.0c", "1.0rc0"),
            ("1.0-1", "1.0.post1"),
            ("1.0.rev", "1.0.post0"),
            ("1.0-dev3", "1.0.dev3"),
            ("2!1.0+Ubuntu-1", "2!1.0+ubuntu.1"),
            ("01.002", "1.2"),
            ("1.0a1.post2.dev3", "1.0a1.post2.dev3"),
            (" 1.0 ", "1.0"),
        ] {
            assert_eq!(parse(s).unwrap().to_string(), n, "{s}");
        }
        assert!(is_normalized("0.2.1"));
        assert!(!is_normalized("v0.2.1"));
        assert!(!is_normalized("01.2"));
    }

    #[test]
    fn rejects() {
        for s in [
            "", "latest", "one", "1.", ".1", "1..2", "1.0+", "1.0+a..b", "1.0x", "v", "1.0-", "1!",
            "1.0 beta", "-1",
        ] {
            assert!(parse(s).is_err(), "{s:?} should be rejected");
        }
    }

    #[test]
    fn major_minor() {
        let v = parse("0.2.1").unwrap();
        assert_eq!((v.major(), v.minor()), (0, 2));
        let v = parse("3").unwrap();
        assert_eq!((v.major(), v.minor()), (3, 0));
    }
}
