//! A fixed-capacity key buffer: MIOpen keys are built on the stack, never on the heap.

use core::fmt;

/// Capacity of a key buffer in bytes. The longest key MIOpen can write for kiln's bounded
/// sizes (3-D, three layouts, mixed types, casts, 8-digit sizes) is well under this.
pub const KEY_CAPACITY: usize = 256;

/// A key under construction. Pushing past [`KEY_CAPACITY`] sets an overflow flag instead of
/// panicking; [`KeyBuf::is_truncated`] reports it and lookups treat such a key as a miss.
/// Only `&str` and ASCII digits are ever pushed, so the bytes are always UTF-8.
#[derive(Clone)]
pub struct KeyBuf {
    bytes: [u8; KEY_CAPACITY],
    len: usize,
    truncated: bool,
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for KeyBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes() && self.truncated == other.truncated
    }
}

impl Eq for KeyBuf {}

impl KeyBuf {
    /// An empty key.
    #[inline]
    pub const fn new() -> Self {
        KeyBuf {
            bytes: [0; KEY_CAPACITY],
            len: 0,
            truncated: false,
        }
    }

    /// The key bytes (what lookups hash and compare).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        // Always UTF-8 (see the type docs); the fallback is never taken.
        core::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// Whether nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether something did not fit.
    #[inline]
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    #[inline]
    fn push_bytes(&mut self, b: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + b.len()) {
            Some(dst) => {
                // Keys are pushed in pieces of 1-6 bytes: a plain loop beats a memcpy call.
                for (d, s) in dst.iter_mut().zip(b) {
                    *d = *s;
                }
                self.len += b.len();
            }
            None => self.truncated = true,
        }
    }

    /// Appends text.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }

    /// Appends one ASCII character.
    #[inline]
    pub fn push_char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.push_bytes(c.encode_utf8(&mut buf).as_bytes());
    }

    /// Appends a number in decimal without going through `core::fmt` (it is on the lookup path).
    #[inline]
    pub fn push_u32(&mut self, mut v: u32) {
        let mut count = 1;
        let mut t = v;
        while t >= 10 {
            t /= 10;
            count += 1;
        }
        match self.bytes.get_mut(self.len..self.len + count) {
            Some(dst) => {
                for d in dst.iter_mut().rev() {
                    *d = b'0' + (v % 10) as u8;
                    v /= 10;
                }
                self.len += count;
            }
            None => self.truncated = true,
        }
    }
}

impl fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for KeyBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
